#include "trainer/layers/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/ops/cpu/sgemm.h"

namespace xlate::trainer {
namespace {

struct Dims {
  int64_t sentences, queries, keys, heads, head_k, head_v;
};

Dims dims_of(const Tensor& q, const Tensor& k, const Tensor& v, int heads) {
  return {q.dim(0), q.dim(1), k.dim(1), heads, q.dim(2) / heads, v.dim(2) / heads};
}

// Softmax of one row of scores in place over the first `visible` entries; the rest become 0.
void softmax_row(float* row, int64_t visible, int64_t width) {
  float maximum = -std::numeric_limits<float>::infinity();
  for (int64_t s = 0; s < visible; ++s) maximum = std::max(maximum, row[s]);
  float total = 0.f;
  for (int64_t s = 0; s < visible; ++s) {
    row[s] = std::exp(row[s] - maximum);
    total += row[s];
  }
  const float inverse = visible > 0 ? 1.f / total : 0.f;
  for (int64_t s = 0; s < visible; ++s) row[s] *= inverse;
  for (int64_t s = visible; s < width; ++s) row[s] = 0.f;
}

}  // namespace

void attention_forward(Tensor& out, Tensor& probs, const Tensor& q, const Tensor& k,
                       const Tensor& v, const Tensor& key_lengths, int heads, bool causal) {
  const Dims d = dims_of(q, k, v, heads);
  const int64_t q_stride = heads * d.head_k, v_stride = heads * d.head_v;
  const float scale = 1.f / std::sqrt(static_cast<float>(d.head_k));
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < d.sentences; ++n) {
    for (int64_t h = 0; h < d.heads; ++h) {
      float* p = probs.data<float>() + (n * d.heads + h) * d.queries * d.keys;
      const float* q_head = q.data<float>() + n * d.queries * q_stride + h * d.head_k;
      const float* k_head = k.data<float>() + n * d.keys * q_stride + h * d.head_k;
      const float* v_head = v.data<float>() + n * d.keys * v_stride + h * d.head_v;
      cpu::sgemm(cpu::Transpose::kNo, cpu::Transpose::kYes, d.queries, d.keys, d.head_k, scale,
                 q_head, q_stride, k_head, q_stride, 0.f, p, d.keys);
      const int64_t length = key_lengths.data<int32_t>()[n];
      for (int64_t t = 0; t < d.queries; ++t) {
        const int64_t visible = causal ? std::min(length, t + 1) : length;
        softmax_row(p + t * d.keys, visible, d.keys);
      }
      cpu::sgemm(cpu::Transpose::kNo, cpu::Transpose::kNo, d.queries, d.head_v, d.keys, 1.f, p,
                 d.keys, v_head, v_stride, 0.f,
                 out.data<float>() + n * d.queries * v_stride + h * d.head_v, v_stride);
    }
  }
}

}  // namespace xlate::trainer
