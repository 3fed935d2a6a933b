#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/ops/cpu/cpu_ops.h"
#include "engine/ops/cpu/vector_math.h"

namespace xlate::cpu {

// One task per (query row, head): scores over the visible keys, softmax, weighted sum of values.
// The score vector [S] is the only scratch; the [T, S] matrix is never materialised.
void attention_forward(Tensor& out, const Tensor& query, const Tensor& keys, const Tensor& values,
                       const Tensor& key_index, const Tensor& key_lengths, int heads,
                       bool causal) {
  const int64_t rows = query.dim(0), steps = query.dim(1), channels = query.dim(2);
  const int64_t capacity = keys.dim(1);
  const int64_t head_dim = channels / heads;
  const float scale = 1.f / std::sqrt(static_cast<float>(head_dim));
  const int32_t* batch_of_row = key_index.data<int32_t>();
  const int32_t* lengths = key_lengths.data<int32_t>();
#pragma omp parallel
  {
    std::vector<float> scores(static_cast<size_t>(capacity));
#pragma omp for collapse(2)
    for (int64_t n = 0; n < rows; ++n) {
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t batch = batch_of_row[n];
        const int64_t length = lengths[batch];
        const float* k = keys.data<float>() + batch * capacity * channels + h * head_dim;
        const float* v = values.data<float>() + batch * capacity * channels + h * head_dim;
        for (int64_t t = 0; t < steps; ++t) {
          const int64_t visible = causal ? std::min(length, length - steps + t + 1) : length;
          const float* q = query.data<float>() + (n * steps + t) * channels + h * head_dim;
          float* o = out.data<float>() + (n * steps + t) * channels + h * head_dim;
          std::memset(o, 0, static_cast<size_t>(head_dim) * sizeof(float));
          if (visible <= 0) continue;
          for (int64_t s = 0; s < visible; ++s) scores[s] = dot(q, k + s * channels, head_dim) * scale;
          const float shift = max_of(scores.data(), visible);
          const float total = exp_shifted_sum(scores.data(), scores.data(), shift, visible);
          for (int64_t s = 0; s < visible; ++s) axpy(o, scores[s] / total, v + s * channels, head_dim);
        }
      }
    }
  }
}

}  // namespace xlate::cpu
