#include <cmath>
#include <vector>

#include "engine/ops/cpu/cpu_ops.h"
#include "engine/ops/cpu/sgemm.h"

namespace xlate::cpu {

void attention_backward(Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& dout,
                        const Tensor& probs, const Tensor& q, const Tensor& k, const Tensor& v,
                        int heads) {
  const int64_t sentences = q.dim(0), queries = q.dim(1), keys = k.dim(1);
  const int64_t head_k = q.dim(2) / heads, head_v = v.dim(2) / heads;
  const int64_t q_stride = heads * head_k, v_stride = heads * head_v;
  const float scale = 1.f / std::sqrt(static_cast<float>(head_k));
#pragma omp parallel
  {
    std::vector<float> dscores(static_cast<size_t>(queries * keys));  // [T, S] per thread
#pragma omp for collapse(2) schedule(static)
    for (int64_t n = 0; n < sentences; ++n) {
      for (int64_t h = 0; h < heads; ++h) {
        const float* p = probs.data<float>() + (n * heads + h) * queries * keys;
        const int64_t q_offset = n * queries * q_stride + h * head_k;
        const int64_t k_offset = n * keys * q_stride + h * head_k;
        const int64_t v_offset = n * keys * v_stride + h * head_v;
        const float* dout_head = dout.data<float>() + n * queries * v_stride + h * head_v;
        // dP = dO Vᵀ, dV = Pᵀ dO
        sgemm(Transpose::kNo, Transpose::kYes, queries, keys, head_v, 1.f, dout_head, v_stride,
              v.data<float>() + v_offset, v_stride, 0.f, dscores.data(), keys);
        sgemm(Transpose::kYes, Transpose::kNo, keys, head_v, queries, 1.f, p, keys, dout_head,
              v_stride, 0.f, dv.data<float>() + v_offset, v_stride);
        // dS = P ⊙ (dP - Σ_s dP ⊙ P) · scale (masked entries have P = 0, so dS = 0)
        for (int64_t t = 0; t < queries; ++t) {
          float* row = dscores.data() + t * keys;
          const float* p_row = p + t * keys;
          float dot = 0.f;
          for (int64_t s = 0; s < keys; ++s) dot += row[s] * p_row[s];
          for (int64_t s = 0; s < keys; ++s) row[s] = p_row[s] * (row[s] - dot) * scale;
        }
        // dQ = dS K, dK = dSᵀ Q
        sgemm(Transpose::kNo, Transpose::kNo, queries, head_k, keys, 1.f, dscores.data(), keys,
              k.data<float>() + k_offset, q_stride, 0.f, dq.data<float>() + q_offset, q_stride);
        sgemm(Transpose::kYes, Transpose::kNo, keys, head_k, queries, 1.f, dscores.data(), keys,
              q.data<float>() + q_offset, q_stride, 0.f, dk.data<float>() + k_offset, q_stride);
      }
    }
  }
}

}  // namespace xlate::cpu
