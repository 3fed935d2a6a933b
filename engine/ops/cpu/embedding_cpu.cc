#include <cstring>

#include "engine/ops/cpu/cpu_ops.h"
#include "engine/ops/cpu/vector_math.h"

namespace xlate::cpu {

void embedding_forward(Tensor& out, const Tensor& tokens, const Tensor& table,
                       const Tensor& positions, float scale, int64_t position_offset,
                       const Tensor& row_positions) {
  const int64_t rows = tokens.dim(0), steps = tokens.dim(1), channels = table.dim(1);
  const int32_t* ids = tokens.data<int32_t>();
  const float* embeddings = table.data<float>();
  const float* position_table = positions.data<float>();
  float* result = out.data<float>();
#pragma omp parallel for collapse(2) if (rows * steps > 16)
  for (int64_t n = 0; n < rows; ++n) {
    for (int64_t t = 0; t < steps; ++t) {
      const int64_t flat = n * steps + t;
      const int64_t first = row_positions.defined() ? row_positions.data<int32_t>()[n] : 0;
      scale_add(result + flat * channels, scale, embeddings + int64_t{ids[flat]} * channels,
                position_table + (position_offset + first + t) * channels, channels);
    }
  }
}

}  // namespace xlate::cpu
