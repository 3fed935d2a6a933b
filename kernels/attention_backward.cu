#include <cstdint>

#include "kernels/attention_backward.h"
#include "kernels/runtime/cuda_check.h"
#include "kernels/runtime/cuda_runtime.h"
#include "kernels/device_math.cuh"
#include "kernels/shared_staging.cuh"

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
constexpr int kRowsPerWarp = 4;  // a float4 of each: one shared load feeds four products
static_assert(kRowsPerWarp == 4, "the kernel reads four rows' values as one float4");

// Where attention_backward_kernel's shared memory holds what, in floats from a 16-byte aligned
// base, every offset a multiple of 4: k [S][d_k], q [T][d_k], dout [T][d_v], v transposed
// [d_v][v_pitch] (odd: lanes reading consecutive keys hit consecutive banks), P then dS
// [T][p_pitch], dSᵀ [S][t_pitch], and per warp its four queries' dout transposed [d_v][4].
// p_pitch and t_pitch are multiples of 4 (float4 reads of four keys / four queries); t_pitch / 4
// is odd, so eight lanes storing float4s at rows t_pitch apart hit distinct banks.
struct BackwardLayout {
  int q = 0, dout = 0, v = 0, p = 0, ds_t = 0, warps = 0;
  int v_pitch = 0, p_pitch = 0, t_pitch = 0;
  int64_t bytes = 0;
};

// Sentences longer than this fit no GPU's shared memory (and keep the layout's int offsets
// exact: every term below stays under 2^28).
constexpr int64_t kMaxStagedTokens = 16384;

BackwardLayout backward_layout(const AttentionBackwardShape& s) {
  BackwardLayout layout;
  const int64_t T = s.queries, S = s.keys;
  if (T > kMaxStagedTokens || S > kMaxStagedTokens) {
    layout.bytes = INT64_MAX;  // fits nowhere: the per-head products
    return layout;
  }
  layout.v_pitch = static_cast<int>(S | 1);
  layout.p_pitch = round_up_4(S);
  layout.t_pitch = round_up_4(T);
  if (layout.t_pitch / 4 % 2 == 0) layout.t_pitch += 4;
  layout.q = round_up_4(S * s.key_dim);
  layout.dout = layout.q + round_up_4(T * s.key_dim);
  layout.v = layout.dout + round_up_4(T * s.value_dim);
  layout.p = layout.v + round_up_4(static_cast<int64_t>(s.value_dim) * layout.v_pitch);
  layout.ds_t = layout.p + round_up_4(T * layout.p_pitch);
  layout.warps = layout.ds_t + round_up_4(S * layout.t_pitch);
  layout.bytes = static_cast<int64_t>(sizeof(float)) *
                 (layout.warps + static_cast<int64_t>(kBackwardWarps) * kRowsPerWarp *
                                     s.value_dim);
  return layout;
}

// One block per (sentence, head), its operands of the Storage type staged as float. Every
// product keeps four rows of its output per warp in registers, its lanes over the output's
// contiguous index (head dims for dV, dQ, dK; keys for dP): per step of the sum one float4
// gives the four rows' factors, so a shared load feeds four fused multiply-adds instead of one.
// Every sum runs in index order; the gradients are rounded to Storage once. kDims: head dims
// per lane.
template <int kDims, typename Storage>
__global__ void attention_backward_kernel(Storage* dq, Storage* dk, Storage* dv,
                                          const Storage* dout, const float* probs,
                                          const Storage* q, const Storage* k, const Storage* v,
                                          AttentionBackwardShape shape, float scale,
                                          BackwardLayout layout) {
  extern __shared__ float4 shared_float4[];  // float4: the base is 16-byte aligned
  float* shared = reinterpret_cast<float*>(shared_float4);
  const int64_t n = blockIdx.x;  // x: sentences may be more than grid.y's 65,535
  const int head = blockIdx.y;
  const int T = static_cast<int>(shape.queries), S = static_cast<int>(shape.keys);
  const int dk_ = shape.key_dim, dv_ = shape.value_dim;
  const int64_t width_k = static_cast<int64_t>(shape.heads) * dk_;
  const int64_t width_v = static_cast<int64_t>(shape.heads) * dv_;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int p_pitch = layout.p_pitch, t_pitch = layout.t_pitch, v_pitch = layout.v_pitch;
  float* k_s = shared;                  // [S][d_k]
  float* q_s = shared + layout.q;       // [T][d_k]
  float* dout_s = shared + layout.dout; // [T][d_v]
  float* v_t = shared + layout.v;       // [d_v][v_pitch]
  float* p_s = shared + layout.p;       // [T][p_pitch]: P, then dS
  float* ds_t = shared + layout.ds_t;   // [S][t_pitch]: dSᵀ
  float* dout4 = shared + layout.warps + warp * kRowsPerWarp * dv_;  // [d_v][4]

  // This sentence's head: row r of q starts (n·T + r)·width_k + head·d_k, and so on.
  const int64_t q_base = n * T * width_k + head * dk_, k_base = n * S * width_k + head * dk_;
  const int64_t v_base = n * S * width_v + head * dv_, o_base = n * T * width_v + head * dv_;
  const float* p_global = probs + (n * shape.heads + head) * T * S;
  stage_rows</*kTransposed=*/false>(
      k_s, dk_, k, [&](int s) { return k_base + s * width_k; }, S, dk_);
  stage_rows</*kTransposed=*/false>(
      q_s, dk_, q, [&](int t) { return q_base + t * width_k; }, T, dk_);
  stage_rows</*kTransposed=*/false>(
      dout_s, dv_, dout, [&](int t) { return o_base + t * width_v; }, T, dv_);
  stage_rows</*kTransposed=*/true>(
      v_t, v_pitch, v, [&](int s) { return v_base + s * width_v; }, S, dv_);
  stage_rows</*kTransposed=*/false>(
      p_s, p_pitch, p_global, [&](int t) { return static_cast<int64_t>(t) * S; }, T, S);
  for (int i = threadIdx.x; i < T * (p_pitch - S); i += blockDim.x) {
    const int pad = p_pitch - S, t = i / pad;
    p_s[t * p_pitch + S + (i - t * pad)] = 0.f;  // padded keys: 0, for the float4 reads
  }
  __syncthreads();

  float acc[kRowsPerWarp][kDims];
  const auto clear = [&] {
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
#pragma unroll
      for (int j = 0; j < kDims; ++j) acc[r][j] = 0.f;
    }
  };
  // acc[r][j] += f.r · row[d], d = lane + 32j, for the four factors f of one step of a sum.
  const auto accumulate = [&](const float4 f, const float* row, int width) {
#pragma unroll
    for (int j = 0; j < kDims; ++j) {
      const int d = lane + j * kWarpSize;
      const float x = d < width ? row[d] : 0.f;
      acc[0][j] += f.x * x;
      acc[1][j] += f.y * x;
      acc[2][j] += f.z * x;
      acc[3][j] += f.w * x;
    }
  };
  // Rows first .. first + 3 of a [rows, width] gradient (global, rows `stride` apart).
  const auto store = [&](Storage* gradient, int64_t stride, int first, int rows, int width) {
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      if (first + r >= rows) continue;
#pragma unroll
      for (int j = 0; j < kDims; ++j) {
        const int d = lane + j * kWarpSize;
        if (d < width) gradient[(first + r) * stride + d] = from_float<Storage>(acc[r][j]);
      }
    }
  };

  // dV[s][d] = Σ_t P[t][s] dO[t][d], keys s0 .. s0 + 3 per warp
  for (int s0 = warp * kRowsPerWarp; s0 < S; s0 += kBackwardWarps * kRowsPerWarp) {
    clear();
    for (int t = 0; t < T; ++t) {
      accumulate(reinterpret_cast<const float4*>(p_s + t * p_pitch)[s0 / 4], dout_s + t * dv_,
                 dv_);
    }
    store(dv + v_base, width_v, s0, S, dv_);
  }
  __syncthreads();  // P is read above and overwritten with dS below

  // dP[t][s] = Σ_d dO[t][d] V[s][d]; dS[t][s] = P[t][s] (dP[t][s] - Σ_s' dP[t][s'] P[t][s'])
  // · scale, queries t0 .. t0 + 3 per warp, lanes over keys.
  for (int t0 = warp * kRowsPerWarp; t0 < T; t0 += kBackwardWarps * kRowsPerWarp) {
    for (int d = lane; d < dv_; d += kWarpSize) {
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        dout4[d * kRowsPerWarp + r] = t0 + r < T ? dout_s[(t0 + r) * dv_ + d] : 0.f;
      }
    }
    __syncwarp();
    float dot[kRowsPerWarp] = {0.f, 0.f, 0.f, 0.f};
    for (int s = lane; s < S; s += kWarpSize) {
      const float4 dots = four_dot_products(dout4, v_t + s, v_pitch, dv_);
      const float dp[kRowsPerWarp] = {dots.x, dots.y, dots.z, dots.w};
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        if (t0 + r >= T) continue;
        dot[r] += dp[r] * p_s[(t0 + r) * p_pitch + s];
        p_s[(t0 + r) * p_pitch + s] = dp[r];  // the same lane rescales it below
      }
    }
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) dot[r] = warp_sum(dot[r]);
    for (int s = lane; s < S; s += kWarpSize) {
      float ds[kRowsPerWarp] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        if (t0 + r >= T) continue;
        float* at = p_s + (t0 + r) * p_pitch + s;
        ds[r] = p_global[(t0 + r) * S + s] * (*at - dot[r]) * scale;
        *at = ds[r];
      }
      reinterpret_cast<float4*>(ds_t + s * t_pitch)[t0 / 4] =
          make_float4(ds[0], ds[1], ds[2], ds[3]);
    }
    __syncwarp();  // the next four queries rewrite dout4
  }
  __syncthreads();

  // dQ[t][d] = Σ_s dS[t][s] K[s][d], queries t0 .. t0 + 3 per warp
  for (int t0 = warp * kRowsPerWarp; t0 < T; t0 += kBackwardWarps * kRowsPerWarp) {
    clear();
    for (int s = 0; s < S; ++s) {
      accumulate(reinterpret_cast<const float4*>(ds_t + s * t_pitch)[t0 / 4], k_s + s * dk_,
                 dk_);
    }
    store(dq + q_base, width_k, t0, T, dk_);
  }
  // dK[s][d] = Σ_t dS[t][s] Q[t][d], keys s0 .. s0 + 3 per warp
  for (int s0 = warp * kRowsPerWarp; s0 < S; s0 += kBackwardWarps * kRowsPerWarp) {
    clear();
    for (int t = 0; t < T; ++t) {
      accumulate(reinterpret_cast<const float4*>(p_s + t * p_pitch)[s0 / 4], q_s + t * dk_, dk_);
    }
    store(dk + k_base, width_k, s0, S, dk_);
  }
}

template <int kDims, typename T>
void launch_backward(T* dq, T* dk, T* dv, const T* dout, const float* probs, const T* q,
                     const T* k, const T* v, const AttentionBackwardShape& shape, float scale,
                     const BackwardLayout& layout, Stream stream) {
  if constexpr (kDims < 8) {
    if (shape.key_dim > kDims * kWarpSize || shape.value_dim > kDims * kWarpSize) {
      return launch_backward<2 * kDims, T>(dq, dk, dv, dout, probs, q, k, v, shape, scale,
                                           layout, stream);
    }
  }
  const int bytes = static_cast<int>(layout.bytes);
  if (static_cast<size_t>(bytes) > kDefaultSharedMemoryPerBlock) {
    XLATE_CUDA_CHECK(cudaFuncSetAttribute(attention_backward_kernel<kDims, T>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  }
  const dim3 grid(static_cast<unsigned>(shape.sentences), static_cast<unsigned>(shape.heads));
  attention_backward_kernel<kDims, T><<<grid, kBackwardWarps * kWarpSize, bytes, stream>>>(
      dq, dk, dv, dout, probs, q, k, v, shape, scale, layout);
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
  // kDims up to 8: heads of up to 256 dims.
  return shape.key_dim <= 8 * kWarpSize && shape.value_dim <= 8 * kWarpSize &&
         backward_layout(shape).bytes <= static_cast<int64_t>(max_shared_memory_per_block());
}

void attention_backward(void* dq, void* dk, void* dv, const void* dout, const float* probs,
                        const void* q, const void* k, const void* v,
                        const AttentionBackwardShape& shape, float scale, ElementType type,
                        Stream stream) {
  if (shape.sentences == 0 || shape.heads == 0) return;
  dispatch_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    launch_backward<1, T>(static_cast<T*>(dq), static_cast<T*>(dk), static_cast<T*>(dv),
                          static_cast<const T*>(dout), probs, static_cast<const T*>(q),
                          static_cast<const T*>(k), static_cast<const T*>(v), shape, scale,
                          backward_layout(shape), stream);
  });
  check_last_launch("attention_backward_kernel");
}

}  // namespace xlate::kernels
