#include "engine/ops/cpu/cpu_ops.h"
#include "engine/ops/cpu/avx512_kernels.h"
#include "engine/ops/cpu/vector_math.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace xlate::cpu {

namespace {

// weights[s] = the normalised e^(score_s - max) that attend_head left in `scores` for s < count,
// 0 for count <= s < width.
void write_weights(float* weights, const float* scores, int64_t count, int64_t width) {
  float total = 0.f;
  for (int64_t s = 0; s < count; ++s) total += scores[s];
  const float normaliser = count > 0 ? 1.f / total : 0.f;
  for (int64_t s = 0; s < count; ++s) weights[s] = scores[s] * normaliser;
  std::fill(weights + count, weights + width, 0.f);
}

// Asks the caches for one head's slices of the key and value rows `rows[0..count)` (slices of
// `key_bytes` and `value_bytes`). A decoding step's keys sit anywhere in the KV cache (the beams'
// rows through the row table), where the hardware prefetchers do not look, and between two steps
// the weights' pass has pushed them out of L2.
void prefetch_head(const float* keys, int64_t key_stride, int64_t key_bytes, const float* values,
                   int64_t value_stride, int64_t value_bytes, const int32_t* rows, int64_t count) {
  constexpr int64_t kLine = 64;
  for (int64_t s = 0; s < count; ++s) {
    const char* key = reinterpret_cast<const char*>(keys + int64_t{rows[s]} * key_stride);
    const char* value = reinterpret_cast<const char*>(values + int64_t{rows[s]} * value_stride);
    for (int64_t b = 0; b < key_bytes; b += kLine) __builtin_prefetch(key + b);
    for (int64_t b = 0; b < value_bytes; b += kLine) __builtin_prefetch(value + b);
  }
}

}  // namespace

// One task per (query row, head); the score vector [S] is the only scratch, the [T, S] matrix
// is never materialised (unless `weights` asks for it).
void attention_forward(Tensor& out, const Columns& query, const Columns& keys,
                       const Columns& values, const Tensor& key_rows, const Tensor& key_lengths,
                       int heads, bool causal, Tensor* weights) {
  const int64_t rows = query.tensor.dim(0), steps = query.tensor.dim(1);
  const int64_t key_width = query.width, value_width = values.width;
  const int64_t table_width = key_rows.dim(1);
  const int64_t key_dim = key_width / heads, value_dim = value_width / heads;
  const float scale = 1.f / std::sqrt(static_cast<float>(key_dim));
  const int32_t* lengths = key_lengths.data<int32_t>();
  const float* query_data = query.tensor.data<float>() + query.first;
  const float* key_data = keys.tensor.data<float>() + keys.first;
  const float* value_data = values.tensor.data<float>() + values.first;
  AttendHeadFunction attend = attend_head_avx512(key_dim, value_dim);
  if (attend == nullptr) attend = attend_head;
#pragma omp parallel
  {
    std::vector<float> scores(static_cast<size_t>(table_width));
#pragma omp for collapse(2) schedule(static)
    for (int64_t n = 0; n < rows; ++n) {
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t length = lengths[n];
        const int32_t* positions = key_rows.data<int32_t>() + n * table_width;
        // The next row's slices of this head, read `heads` tasks from now, unless they are this
        // row's (the beams of a sentence share its source rows).
        if (n + 1 < rows) {
          const int32_t* next = positions + table_width;
          const int64_t next_length = std::clamp<int64_t>(lengths[n + 1], 0, table_width);
          if (!std::equal(next, next + next_length, positions)) {
            prefetch_head(key_data + h * key_dim, keys.stride(), key_dim * int64_t{sizeof(float)},
                          value_data + h * value_dim, values.stride(),
                          value_dim * int64_t{sizeof(float)}, next, next_length);
          }
        }
        for (int64_t t = 0; t < steps; ++t) {
          const int64_t visible = std::max<int64_t>(causal ? length - steps + t + 1 : length, 0);
          const int64_t query_row = n * steps + t;
          attend(out.data<float>() + query_row * value_width + h * value_dim,
                 query_data + query_row * query.stride() + h * key_dim, key_data + h * key_dim,
                 value_data + h * value_dim, positions, visible, {keys.stride(), key_dim},
                 {values.stride(), value_dim}, scale, scores.data());
          if (weights != nullptr) {
            write_weights(weights->data<float>() + ((n * heads + h) * steps + t) * table_width,
                          scores.data(), visible, table_width);
          }
        }
      }
    }
  }
}

}  // namespace xlate::cpu
