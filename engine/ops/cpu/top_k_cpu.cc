#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "engine/ops/cpu/cpu_ops.h"

namespace xlate::cpu {

// The reference of the CUDA kernel's fused log-softmax + top-k: log-probabilities in float32
// (max-shifted, log of the sum of exponentials), then a partial sort by (value desc, id asc).
void log_softmax_top_k(Tensor& top_values, Tensor& top_indices, const Tensor& logits,
                       const Tensor& row_offsets, int k) {
  const int64_t vocabulary = logits.dim(-1), rows = logits.numel() / vocabulary;
  std::vector<float> shifted(static_cast<size_t>(vocabulary));
  std::vector<int32_t> ids(static_cast<size_t>(vocabulary));
  for (int64_t n = 0; n < rows; ++n) {
    const float* row = logits.data<float>() + n * vocabulary;
    const float best = *std::max_element(row, row + vocabulary);
    float sum = 0.f;
    for (int64_t v = 0; v < vocabulary; ++v) sum += std::exp(row[v] - best);
    const float offset = row_offsets.defined() ? row_offsets.data<float>()[n] : 0.f;
    const float shift = offset - best - std::log(sum);
    for (int64_t v = 0; v < vocabulary; ++v) shifted[v] = row[v] + shift;
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
      return shifted[a] > shifted[b] || (shifted[a] == shifted[b] && a < b);
    });
    for (int j = 0; j < k; ++j) {
      top_values.data<float>()[n * k + j] = shifted[ids[j]];
      top_indices.data<int32_t>()[n * k + j] = ids[j];
    }
  }
}

}  // namespace xlate::cpu
