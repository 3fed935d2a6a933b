#include <cmath>
#include <cstdint>

#include "kernels/attention.h"
#include "kernels/runtime/cuda_check.h"
#include "kernels/runtime/cuda_runtime.h"
#include "kernels/device_math.cuh"
#include "kernels/shared_staging.cuh"

namespace xlate::kernels {
namespace {

constexpr int kWarps = 4;
constexpr int kKeysInFlight = 4;  // keys a warp scores at once: independent loads overlap

// One block of kWarps warps per (head, query position, row). Warp w visits key positions in
// groups of kKeysInFlight: w·4 .. w·4 + 3, then 4·kWarps further on; its 32 lanes split the head
// dimensions (kDims per lane) for the dot products and for the weighted value sums. Each warp
// keeps an online softmax (running max m, running sum l, running weighted values acc), so no
// score vector or [T, S] matrix is ever stored; the warps' partial results are merged at the
// end: out = Σ_w acc_w e^(m_w - M) / Σ_w l_w e^(m_w - M). When `weights` is asked for, the
// scores are computed once more, now that M and the normaliser are known (write_weights).
template <typename T, int kDims>
__global__ void attention_forward_kernel(T* out, float* weights, const T* query, const T* keys,
                                         const T* values, const int32_t* key_rows,
                                         const int32_t* key_lengths, AttentionShape shape,
                                         float scale) {
  __shared__ float warp_max_score[kWarps];
  __shared__ float warp_total[kWarps];
  __shared__ float warp_values[kWarps][kDims * kWarpSize];
  const int head = blockIdx.x;
  const int64_t t = blockIdx.y, n = blockIdx.z;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int64_t length = key_lengths[n];
  const int64_t visible_unclamped = shape.causal ? length - shape.steps + t + 1 : length;
  const int64_t visible = visible_unclamped < 0 ? 0
                          : (visible_unclamped > shape.table_width ? shape.table_width
                                                                   : visible_unclamped);
  const int64_t query_row = n * shape.steps + t;
  T* out_head = out + query_row * shape.heads * shape.value_dim + head * shape.value_dim;
  // This query's row of weights [N, h, T, S].
  float* weights_row =
      weights == nullptr ? nullptr
                         : weights + ((n * shape.heads + head) * shape.steps + t) * shape.table_width;
  if (weights_row != nullptr) {
    for (int64_t s = visible + threadIdx.x; s < shape.table_width; s += blockDim.x) {
      weights_row[s] = 0.f;
    }
  }
  if (visible == 0) {
    for (int d = threadIdx.x; d < shape.value_dim; d += blockDim.x) {
      out_head[d] = from_float<T>(0.f);
    }
    return;
  }

  float q[kDims];
  const T* query_head = query + query_row * shape.query_stride + head * shape.key_dim;
#pragma unroll
  for (int j = 0; j < kDims; ++j) {
    const int d = lane + j * kWarpSize;
    q[j] = d < shape.key_dim ? to_float(query_head[d]) * scale : 0.f;
  }
  float running_max = -INFINITY, total = 0.f, acc[kDims];
#pragma unroll
  for (int j = 0; j < kDims; ++j) acc[j] = 0.f;

  const int32_t* positions = key_rows + n * shape.table_width;
  for (int64_t first = warp * kKeysInFlight; first < visible; first += kWarps * kKeysInFlight) {
    int64_t rows[kKeysInFlight];
    float scores[kKeysInFlight];
    float group_max = -INFINITY;
#pragma unroll
    for (int u = 0; u < kKeysInFlight; ++u) {
      const bool seen = first + u < visible;
      rows[u] = seen ? positions[first + u] : -1;
      float partial = 0.f;
      if (seen) {
        const T* key = keys + rows[u] * shape.key_stride + head * shape.key_dim;
#pragma unroll
        for (int j = 0; j < kDims; ++j) {
          const int d = lane + j * kWarpSize;
          if (d < shape.key_dim) partial += q[j] * to_float(key[d]);
        }
      }
      scores[u] = partial;
    }
#pragma unroll
    for (int u = 0; u < kKeysInFlight; ++u) {
      scores[u] = rows[u] < 0 ? -INFINITY : warp_sum(scores[u]);
      group_max = fmaxf(group_max, scores[u]);
    }
    const float new_max = fmaxf(running_max, group_max);
    const float rescale = expf(running_max - new_max);  // 0 on the first keys (max was -inf)
    total *= rescale;
#pragma unroll
    for (int j = 0; j < kDims; ++j) acc[j] *= rescale;
#pragma unroll
    for (int u = 0; u < kKeysInFlight; ++u) {
      if (rows[u] < 0) continue;
      const float weight = expf(scores[u] - new_max);
      total += weight;
      const T* value = values + rows[u] * shape.value_stride + head * shape.value_dim;
#pragma unroll
      for (int j = 0; j < kDims; ++j) {
        const int d = lane + j * kWarpSize;
        if (d < shape.value_dim) acc[j] += weight * to_float(value[d]);
      }
    }
    running_max = new_max;
  }

  if (lane == 0) {
    warp_max_score[warp] = running_max;
    warp_total[warp] = total;
  }
#pragma unroll
  for (int j = 0; j < kDims; ++j) {
    const int d = lane + j * kWarpSize;
    if (d < shape.value_dim) warp_values[warp][d] = acc[j];
  }
  __syncthreads();
  float block_max_score = -INFINITY;
  for (int w = 0; w < kWarps; ++w) block_max_score = fmaxf(block_max_score, warp_max_score[w]);
  float normaliser = 0.f, factors[kWarps];
  for (int w = 0; w < kWarps; ++w) {
    // A warp that saw no key has max -inf and contributes nothing.
    factors[w] = warp_max_score[w] == -INFINITY ? 0.f : expf(warp_max_score[w] - block_max_score);
    normaliser += warp_total[w] * factors[w];
  }
  for (int d = threadIdx.x; d < shape.value_dim; d += blockDim.x) {
    float sum = 0.f;
    for (int w = 0; w < kWarps; ++w) sum += warp_values[w][d] * factors[w];
    out_head[d] = from_float<T>(sum / normaliser);
  }
  if (weights_row == nullptr) return;
  // write_weights: warp w scores keys w, w + kWarps, ... again (same lanes, same sums).
  for (int64_t s = warp; s < visible; s += kWarps) {
    const T* key = keys + static_cast<int64_t>(positions[s]) * shape.key_stride +
                   head * shape.key_dim;
    float partial = 0.f;
#pragma unroll
    for (int j = 0; j < kDims; ++j) {
      const int d = lane + j * kWarpSize;
      if (d < shape.key_dim) partial += q[j] * to_float(key[d]);
    }
    const float score = warp_sum(partial);
    if (lane == 0) weights_row[s] = expf(score - block_max_score) / normaliser;
  }
}

constexpr int kStagedWarps = 8;
constexpr int kQueriesPerWarp = 4;  // a float4 of each: one shared load feeds four products
static_assert(kQueriesPerWarp == 4, "the kernel reads the four queries as one float4");

// Where attention_staged_kernel's shared memory holds what, in floats from a 16-byte aligned
// base: keys transposed [key_dim][pitch] (an odd pitch: lanes reading consecutive keys hit
// consecutive banks), values [S][value_dim], then per warp its 4 queries transposed
// [key_dim][4] and their scores, later probabilities, [S][4]. Offsets are multiples of 4 floats.
struct StagedLayout {
  int pitch = 0;
  int values = 0;
  int warps = 0;      // the first warp's region
  int per_warp = 0;   // floats per warp
  int bytes = 0;
};

// Rows longer than this fit no GPU's shared memory (and keep the layout's int offsets exact).
constexpr int64_t kMaxStagedKeys = 16384;

StagedLayout staged_layout(const AttentionShape& shape) {
  StagedLayout layout;
  if (shape.table_width > kMaxStagedKeys) {
    layout.bytes = INT32_MAX;  // fits nowhere: the kernel of one query per block
    return layout;
  }
  layout.pitch = static_cast<int>(shape.table_width) | 1;
  layout.values = round_up_4(static_cast<int64_t>(shape.key_dim) * layout.pitch);
  layout.warps = round_up_4(layout.values + shape.table_width * shape.value_dim);
  layout.per_warp = kQueriesPerWarp * (shape.key_dim + static_cast<int>(shape.table_width));
  const int64_t bytes =
      sizeof(float) * (static_cast<int64_t>(layout.warps) + kStagedWarps * layout.per_warp);
  layout.bytes = bytes > INT32_MAX ? INT32_MAX : static_cast<int>(bytes);
  return layout;
}

// Many queries of one row (the encoder, training): one block of kStagedWarps warps per (row n,
// head) stages the head's keys and values of row n in shared memory once, as float, instead of
// every query's block reading them again (the kernel above, kept for one query per row:
// decoding). Warp w then takes queries in fours, t0 = 4w, 4w + 4·kStagedWarps, ...: lane l
// scores keys l, l + 32, ... for all four (one shared load of the key and one float4 of the
// four queries per dimension), the warp reduces each query's max and sum, and lane l sums
// Σ_s p_s·v[s][d] for dims d = l, l + 32, ... in key order, four queries per value loaded.
// A query's result depends only on its own visible keys, not on the batch's padding.
// kDims: value dims per lane (value_dim <= 32·kDims).
template <typename T, int kDims>
__global__ void attention_staged_kernel(T* out, float* weights, const T* query, const T* keys,
                                        const T* values, const int32_t* key_rows,
                                        const int32_t* key_lengths, AttentionShape shape,
                                        float scale, StagedLayout layout) {
  extern __shared__ float4 staged_float4[];  // float4: the base is 16-byte aligned
  float* staged = reinterpret_cast<float*>(staged_float4);
  const int64_t n = blockIdx.x;  // x: rows may be more than grid.y's 65,535
  const int head = blockIdx.y;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int table_width = static_cast<int>(shape.table_width);
  const int key_dim = shape.key_dim, value_dim = shape.value_dim, pitch = layout.pitch;
  const int steps = static_cast<int>(shape.steps);
  const int64_t length = key_lengths[n];
  // Every query of the row sees at most its first `keys_seen` keys (causal: the last query).
  const int keys_seen =
      static_cast<int>(length < 0 ? 0 : (length > table_width ? table_width : length));
  float* keys_t = staged;                    // [key_dim][pitch]
  float* values_s = staged + layout.values;  // [S][value_dim]
  float* queries4 = staged + layout.warps + warp * layout.per_warp;  // [key_dim][4]
  float* scores4 = queries4 + kQueriesPerWarp * key_dim;              // [S][4]

  const int32_t* positions = key_rows + n * table_width;
  stage_rows</*kTransposed=*/true>(
      keys_t, pitch, keys,
      [&](int s) { return positions[s] * shape.key_stride + head * key_dim; }, keys_seen,
      key_dim);
  stage_rows</*kTransposed=*/false>(
      values_s, value_dim, values,
      [&](int s) { return positions[s] * shape.value_stride + head * value_dim; }, keys_seen,
      value_dim);
  __syncthreads();

  for (int first = warp * kQueriesPerWarp; first < steps;
       first += kStagedWarps * kQueriesPerWarp) {
    int visible[kQueriesPerWarp];
    int most = 0;  // keys any of the four sees
#pragma unroll
    for (int q = 0; q < kQueriesPerWarp; ++q) {
      const int t = first + q;
      const int64_t unclamped =
          t >= steps ? 0 : (shape.causal ? length - shape.steps + t + 1 : length);
      visible[q] = static_cast<int>(unclamped < 0 ? 0 : (unclamped > keys_seen ? keys_seen
                                                                               : unclamped));
      most = max(most, visible[q]);
    }
    for (int d = lane; d < key_dim; d += kWarpSize) {
#pragma unroll
      for (int q = 0; q < kQueriesPerWarp; ++q) {
        const int64_t row = n * steps + first + q;
        queries4[d * kQueriesPerWarp + q] =
            first + q < steps
                ? to_float(query[row * shape.query_stride + head * key_dim + d]) * scale
                : 0.f;
      }
    }
    __syncwarp();
    float row_max[kQueriesPerWarp];
#pragma unroll
    for (int q = 0; q < kQueriesPerWarp; ++q) row_max[q] = -INFINITY;
    for (int s = lane; s < most; s += kWarpSize) {
      const float4 dots = four_dot_products(queries4, keys_t + s, pitch, key_dim);
      float score[kQueriesPerWarp] = {dots.x, dots.y, dots.z, dots.w};
#pragma unroll
      for (int q = 0; q < kQueriesPerWarp; ++q) {
        if (s >= visible[q]) score[q] = -INFINITY;
        row_max[q] = fmaxf(row_max[q], score[q]);
      }
      reinterpret_cast<float4*>(scores4)[s] = make_float4(score[0], score[1], score[2], score[3]);
    }
    float inverse_total[kQueriesPerWarp];
#pragma unroll
    for (int q = 0; q < kQueriesPerWarp; ++q) {
      row_max[q] = warp_max(row_max[q]);
      inverse_total[q] = 0.f;
    }
    for (int s = lane; s < most; s += kWarpSize) {
      float4 e = reinterpret_cast<float4*>(scores4)[s];
      e.x = s < visible[0] ? expf(e.x - row_max[0]) : 0.f;
      e.y = s < visible[1] ? expf(e.y - row_max[1]) : 0.f;
      e.z = s < visible[2] ? expf(e.z - row_max[2]) : 0.f;
      e.w = s < visible[3] ? expf(e.w - row_max[3]) : 0.f;
      reinterpret_cast<float4*>(scores4)[s] = e;
      inverse_total[0] += e.x;
      inverse_total[1] += e.y;
      inverse_total[2] += e.z;
      inverse_total[3] += e.w;
    }
#pragma unroll
    for (int q = 0; q < kQueriesPerWarp; ++q) {
      const float total = warp_sum(inverse_total[q]);
      inverse_total[q] = total > 0.f ? 1.f / total : 0.f;  // no visible key: zeros
    }
    for (int s = lane; s < most; s += kWarpSize) {
      float4 p = reinterpret_cast<float4*>(scores4)[s];
      p.x *= inverse_total[0];
      p.y *= inverse_total[1];
      p.z *= inverse_total[2];
      p.w *= inverse_total[3];
      reinterpret_cast<float4*>(scores4)[s] = p;
    }
    if (weights != nullptr) {  // each query's row [S]: its probabilities, 0 past what it sees
#pragma unroll
      for (int q = 0; q < kQueriesPerWarp; ++q) {
        if (first + q >= steps) continue;
        float* row = weights + ((n * shape.heads + head) * shape.steps + first + q) * table_width;
        for (int s = lane; s < table_width; s += kWarpSize) {
          row[s] = s < visible[q] ? scores4[s * kQueriesPerWarp + q] : 0.f;
        }
      }
    }
    __syncwarp();
    float acc[kQueriesPerWarp][kDims];
#pragma unroll
    for (int q = 0; q < kQueriesPerWarp; ++q) {
#pragma unroll
      for (int j = 0; j < kDims; ++j) acc[q][j] = 0.f;
    }
    for (int s = 0; s < most; ++s) {
      const float4 p = reinterpret_cast<const float4*>(scores4)[s];
#pragma unroll
      for (int j = 0; j < kDims; ++j) {
        const int d = lane + j * kWarpSize;
        const float v = d < value_dim ? values_s[s * value_dim + d] : 0.f;
        acc[0][j] += p.x * v;
        acc[1][j] += p.y * v;
        acc[2][j] += p.z * v;
        acc[3][j] += p.w * v;
      }
    }
#pragma unroll
    for (int q = 0; q < kQueriesPerWarp; ++q) {
      if (first + q >= steps) continue;
      T* out_head = out + (n * steps + first + q) * shape.heads * value_dim + head * value_dim;
#pragma unroll
      for (int j = 0; j < kDims; ++j) {
        const int d = lane + j * kWarpSize;
        if (d < value_dim) out_head[d] = from_float<T>(acc[q][j]);
      }
    }
    __syncwarp();  // the next four queries rewrite queries4 and scores4
  }
}

template <typename T, int kDims>
void launch_staged(T* out, float* weights, const T* query, const T* keys, const T* values,
                   const int32_t* key_rows, const int32_t* key_lengths,
                   const AttentionShape& shape, float scale, const StagedLayout& layout,
                   Stream stream) {
  if constexpr (kDims < kMaxAttentionHeadDim / kWarpSize) {
    if (shape.value_dim > kDims * kWarpSize) {
      return launch_staged<T, 2 * kDims>(out, weights, query, keys, values, key_rows,
                                         key_lengths, shape, scale, layout, stream);
    }
  }
  if (static_cast<size_t>(layout.bytes) > kDefaultSharedMemoryPerBlock) {
    XLATE_CUDA_CHECK(cudaFuncSetAttribute(attention_staged_kernel<T, kDims>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          layout.bytes));
  }
  const dim3 grid(static_cast<unsigned>(shape.rows), static_cast<unsigned>(shape.heads));
  attention_staged_kernel<T, kDims><<<grid, kStagedWarps * kWarpSize, layout.bytes, stream>>>(
      out, weights, query, keys, values, key_rows, key_lengths, shape, scale, layout);
}

// Launches the kernel with the fewest head dimensions per lane that cover both head sizes.
template <typename T, int kDims>
void launch_attention(const dim3& grid, T* out, float* weights, const T* query, const T* keys,
                      const T* values, const int32_t* key_rows, const int32_t* key_lengths,
                      const AttentionShape& shape, float scale, Stream stream) {
  const int widest = shape.key_dim > shape.value_dim ? shape.key_dim : shape.value_dim;
  if constexpr (kDims < kMaxAttentionHeadDim / kWarpSize) {
    if (widest > kDims * kWarpSize) {
      return launch_attention<T, 2 * kDims>(grid, out, weights, query, keys, values, key_rows,
                                            key_lengths, shape, scale, stream);
    }
  }
  attention_forward_kernel<T, kDims><<<grid, kWarps * kWarpSize, 0, stream>>>(
      out, weights, query, keys, values, key_rows, key_lengths, shape, scale);
}

}  // namespace

void attention_forward(void* out, float* weights, const void* query, const void* keys,
                       const void* values, const int32_t* key_rows, const int32_t* key_lengths,
                       const AttentionShape& shape, ElementType type, Stream stream) {
  if (shape.key_dim > kMaxAttentionHeadDim || shape.value_dim > kMaxAttentionHeadDim) {
    throw std::logic_error("attention_forward: head dimension beyond kMaxAttentionHeadDim");
  }
  if (shape.rows == 0 || shape.steps == 0) return;
  const float scale = 1.f / std::sqrt(static_cast<float>(shape.key_dim));
  // Several queries per row share their keys: stage them once per (row, head) when they fit.
  const StagedLayout layout = staged_layout(shape);
  if (shape.steps > 1 && static_cast<size_t>(layout.bytes) <= max_shared_memory_per_block()) {
    dispatch_float_type(type, [&](auto tag) {
      using T = decltype(tag);
      launch_staged<T, 1>(static_cast<T*>(out), weights, static_cast<const T*>(query),
                          static_cast<const T*>(keys), static_cast<const T*>(values), key_rows,
                          key_lengths, shape, scale, layout, stream);
    });
    check_last_launch("attention_staged_kernel");
    return;
  }
  const dim3 grid(static_cast<unsigned>(shape.heads), static_cast<unsigned>(shape.steps),
                  static_cast<unsigned>(shape.rows));
  dispatch_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    launch_attention<T, 1>(grid, static_cast<T*>(out), weights, static_cast<const T*>(query),
                           static_cast<const T*>(keys), static_cast<const T*>(values), key_rows,
                           key_lengths, shape, scale, stream);
  });
  check_last_launch("attention_forward_kernel");
}

}  // namespace xlate::kernels
