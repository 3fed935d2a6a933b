#include <cstring>
#include <vector>

#include "engine/ops/cpu/cpu_ops.h"

namespace xlate::cpu {

// Only rows whose source differs from themselves move: they are first copied out, then written
// back, so a row may be both a source and a destination.
void gather_cache_rows(Tensor& cache, const std::vector<int32_t>& source_rows,
                       int64_t valid_positions) {
  const int64_t row_stride = cache.dim(1) * cache.dim(2);
  const size_t row_bytes = static_cast<size_t>(valid_positions * cache.dim(2)) * sizeof(float);
  float* base = cache.data<float>();
  std::vector<int32_t> moved;
  for (int32_t r = 0; r < static_cast<int32_t>(source_rows.size()); ++r) {
    if (source_rows[r] != r) moved.push_back(r);
  }
  if (moved.empty() || row_bytes == 0) return;
  const int64_t count = static_cast<int64_t>(moved.size());
  std::vector<float> staging(static_cast<size_t>(count * valid_positions * cache.dim(2)));
  const int64_t staged_row = valid_positions * cache.dim(2);
#pragma omp parallel for if (count > 8)
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(staging.data() + i * staged_row, base + source_rows[moved[i]] * row_stride,
                row_bytes);
  }
#pragma omp parallel for if (count > 8)
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(base + moved[i] * row_stride, staging.data() + i * staged_row, row_bytes);
  }
}

}  // namespace xlate::cpu
