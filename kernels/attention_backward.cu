#include "kernels/attention_backward.h"
#include "kernels/cuda_check.h"
#include "kernels/cuda_runtime.h"
#include "kernels/device_math.cuh"

namespace xlate::kernels {
namespace {

constexpr int kRowsPerBlock = 8;  // one warp per row

__global__ void softmax_backward_kernel(float* dscores, const float* probs, int64_t rows,
                                        int64_t width, float scale) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarpSize;
  if (row >= rows) return;
  const int lane = threadIdx.x % kWarpSize;
  float* d = dscores + row * width;
  const float* p = probs + row * width;
  float dot = 0.f;
  for (int64_t s = lane; s < width; s += kWarpSize) dot += d[s] * p[s];
  dot = warp_sum(dot);
  for (int64_t s = lane; s < width; s += kWarpSize) d[s] = p[s] * (d[s] - dot) * scale;
}


constexpr int kBackwardWarps = 8;

// Shared memory of attention_backward_kernel, in floats: k [S][d_k], v transposed [d_v][pitch],
// q [T][d_k], dout [T][d_v], probabilities then dS [T][S].
int64_t backward_pitch(const AttentionBackwardShape& shape) { return shape.keys | 1; }

size_t backward_shared_bytes(const AttentionBackwardShape& s) {
  const int64_t floats = s.keys * s.key_dim + s.value_dim * backward_pitch(s) +
                         s.queries * (s.key_dim + s.value_dim) + s.queries * s.keys;
  return sizeof(float) * static_cast<size_t>(floats);
}

// One block per (sentence, head). Each product's lanes run over the index whose operand is
// contiguous in shared memory (head dims for dV, dQ, dK; keys for dP, reading v transposed with
// an odd pitch), the other operand a broadcast; every sum runs in index order.
__global__ void attention_backward_kernel(float* dq, float* dk, float* dv, const float* dout,
                                          const float* probs, const float* q, const float* k,
                                          const float* v, AttentionBackwardShape shape,
                                          float scale, int64_t pitch) {
  extern __shared__ float shared[];
  const int64_t n = blockIdx.x;  // x: sentences may be more than grid.y's 65,535
  const int head = blockIdx.y;
  const int64_t T = shape.queries, S = shape.keys;
  const int dk_ = shape.key_dim, dv_ = shape.value_dim;
  const int64_t width_k = static_cast<int64_t>(shape.heads) * dk_;
  const int64_t width_v = static_cast<int64_t>(shape.heads) * dv_;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = blockDim.x / kWarpSize;
  float* k_s = shared;                  // [S][d_k]
  float* v_t = k_s + S * dk_;           // [d_v][pitch]
  float* q_s = v_t + dv_ * pitch;       // [T][d_k]
  float* dout_s = q_s + T * dk_;        // [T][d_v]
  float* p_s = dout_s + T * dv_;        // [T][S]: P, then dS

  // This sentence's head: row r of q starts (n·T + r)·width_k + head·d_k, and so on.
  const int64_t q_base = n * T * width_k + head * dk_, k_base = n * S * width_k + head * dk_;
  const int64_t v_base = n * S * width_v + head * dv_, o_base = n * T * width_v + head * dv_;
  const float* p_global = probs + (n * shape.heads + head) * T * S;
  for (int64_t i = threadIdx.x; i < S * dk_; i += blockDim.x) {
    const int64_t s = i / dk_, d = i - s * dk_;
    k_s[i] = k[k_base + s * width_k + d];
  }
  for (int64_t i = threadIdx.x; i < S * dv_; i += blockDim.x) {
    const int64_t s = i / dv_, d = i - s * dv_;
    v_t[d * pitch + s] = v[v_base + s * width_v + d];
  }
  for (int64_t i = threadIdx.x; i < T * dk_; i += blockDim.x) {
    const int64_t t = i / dk_, d = i - t * dk_;
    q_s[i] = q[q_base + t * width_k + d];
  }
  for (int64_t i = threadIdx.x; i < T * dv_; i += blockDim.x) {
    const int64_t t = i / dv_, d = i - t * dv_;
    dout_s[i] = dout[o_base + t * width_v + d];
  }
  for (int64_t i = threadIdx.x; i < T * S; i += blockDim.x) p_s[i] = p_global[i];
  __syncthreads();

  // dV[s][d] = Σ_t P[t][s] dO[t][d]
  for (int64_t s = warp; s < S; s += warps) {
    for (int d = lane; d < dv_; d += kWarpSize) {
      float sum = 0.f;
      for (int64_t t = 0; t < T; ++t) sum += p_s[t * S + s] * dout_s[t * dv_ + d];
      dv[v_base + s * width_v + d] = sum;
    }
  }
  __syncthreads();  // P is read above and overwritten with dS below

  // dS[t][s] = P[t][s] (dP[t][s] - Σ_s' dP[t][s'] P[t][s']) · scale, dP[t][s] = Σ_d dO[t][d] V[s][d]
  for (int64_t t = warp; t < T; t += warps) {
    float dot = 0.f;
    for (int64_t s = lane; s < S; s += kWarpSize) {
      float dp = 0.f;
      for (int d = 0; d < dv_; ++d) dp += dout_s[t * dv_ + d] * v_t[d * pitch + s];
      dot += dp * p_s[t * S + s];
      // Held in registers until the row's sum is known would need S / 32 of them; keep dP in
      // the row, then rescale it in place (the same lane reads and writes each element).
      p_s[t * S + s] = dp;
    }
    dot = warp_sum(dot);
    for (int64_t s = lane; s < S; s += kWarpSize) {
      const float probability = p_global[t * S + s];
      p_s[t * S + s] = probability * (p_s[t * S + s] - dot) * scale;
    }
  }
  __syncthreads();

  // dQ[t][d] = Σ_s dS[t][s] K[s][d]
  for (int64_t t = warp; t < T; t += warps) {
    for (int d = lane; d < dk_; d += kWarpSize) {
      float sum = 0.f;
      for (int64_t s = 0; s < S; ++s) sum += p_s[t * S + s] * k_s[s * dk_ + d];
      dq[q_base + t * width_k + d] = sum;
    }
  }
  // dK[s][d] = Σ_t dS[t][s] Q[t][d]
  for (int64_t s = warp; s < S; s += warps) {
    for (int d = lane; d < dk_; d += kWarpSize) {
      float sum = 0.f;
      for (int64_t t = 0; t < T; ++t) sum += p_s[t * S + s] * q_s[t * dk_ + d];
      dk[k_base + s * width_k + d] = sum;
    }
  }
}

}  // namespace

void softmax_backward(float* dscores, const float* probs, int64_t rows, int64_t width,
                      float scale, Stream stream) {
  if (rows == 0 || width == 0) return;
  softmax_backward_kernel<<<grid_size(rows, kRowsPerBlock), kRowsPerBlock * kWarpSize, 0,
                            stream>>>(dscores, probs, rows, width, scale);
  check_last_launch("softmax_backward_kernel");
}

bool attention_backward_fits(const AttentionBackwardShape& shape) {
  return backward_shared_bytes(shape) <= max_shared_memory_per_block();
}

void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* probs,
                        const float* q, const float* k, const float* v,
                        const AttentionBackwardShape& shape, float scale, Stream stream) {
  if (shape.sentences == 0 || shape.heads == 0) return;
  const size_t bytes = backward_shared_bytes(shape);
  if (bytes > kDefaultSharedMemoryPerBlock) {
    XLATE_CUDA_CHECK(cudaFuncSetAttribute(attention_backward_kernel,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(bytes)));
  }
  const dim3 grid(static_cast<unsigned>(shape.sentences), static_cast<unsigned>(shape.heads));
  attention_backward_kernel<<<grid, kBackwardWarps * kWarpSize, bytes, stream>>>(
      dq, dk, dv, dout, probs, q, k, v, shape, scale, backward_pitch(shape));
  check_last_launch("attention_backward_kernel");
}

}  // namespace xlate::kernels
