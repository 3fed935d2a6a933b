#include <cmath>

#include "kernels/attention.h"
#include "kernels/cuda_check.h"
#include "kernels/cuda_runtime.h"
#include "kernels/device_math.cuh"

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

// Many queries of one row (the encoder, training): one block of kStagedWarps warps per (row n,
// head) stages the head's keys and values of row n in shared memory once, as float, instead of
// every query's block reading them again (the kernel above, kept for one query per row:
// decoding). Keys are stored transposed, [key_dim][pitch] with an odd pitch, so that lanes
// scoring consecutive keys read consecutive words; values [S][value_dim]. Warp w then takes
// queries t = w, w + kStagedWarps, ...: lane l scores keys l, l + 32, ... into the warp's row of scores, the
// warp reduces max and sum, and lane l sums Σ_s p_s·v[s][d] for dims d = l, l + 32, ... in key
// order. A query's result depends only on its own visible keys, not on the batch's padding.
// Shared memory: attention_staged_bytes.
template <typename T>
__global__ void attention_staged_kernel(T* out, float* weights, const T* query, const T* keys,
                                        const T* values, const int32_t* key_rows,
                                        const int32_t* key_lengths, AttentionShape shape,
                                        float scale, int pitch) {
  extern __shared__ float staged[];
  const int64_t n = blockIdx.x;  // x: rows may be more than grid.y's 65,535
  const int head = blockIdx.y;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int64_t table_width = shape.table_width;
  const int64_t length = key_lengths[n];
  // Every query of the row sees at most its first `keys_seen` keys (causal: the last query).
  const int keys_seen =
      static_cast<int>(length < 0 ? 0 : (length > table_width ? table_width : length));
  float* keys_t = staged;                               // [key_dim][pitch]
  float* values_s = keys_t + shape.key_dim * pitch;     // [S][value_dim]
  float* warp_query = values_s + table_width * shape.value_dim + warp * (shape.key_dim + pitch);
  float* warp_scores = warp_query + shape.key_dim;      // [pitch]

  const int32_t* positions = key_rows + n * table_width;
  for (int i = threadIdx.x; i < keys_seen * shape.key_dim; i += blockDim.x) {
    const int s = i / shape.key_dim, d = i - s * shape.key_dim;
    keys_t[d * pitch + s] = to_float(
        keys[static_cast<int64_t>(positions[s]) * shape.key_stride + head * shape.key_dim + d]);
  }
  for (int i = threadIdx.x; i < keys_seen * shape.value_dim; i += blockDim.x) {
    const int s = i / shape.value_dim, d = i - s * shape.value_dim;
    values_s[i] = to_float(values[static_cast<int64_t>(positions[s]) * shape.value_stride +
                                  head * shape.value_dim + d]);
  }
  __syncthreads();

  for (int64_t t = warp; t < shape.steps; t += blockDim.x / kWarpSize) {
    const int64_t visible_unclamped = shape.causal ? length - shape.steps + t + 1 : length;
    const int visible = static_cast<int>(
        visible_unclamped < 0 ? 0
                              : (visible_unclamped > keys_seen ? keys_seen : visible_unclamped));
    const int64_t query_row = n * shape.steps + t;
    T* out_head = out + query_row * shape.heads * shape.value_dim + head * shape.value_dim;
    float* weights_row =
        weights == nullptr ? nullptr
                           : weights + ((n * shape.heads + head) * shape.steps + t) * table_width;
    if (weights_row != nullptr) {
      for (int64_t s = visible + lane; s < table_width; s += kWarpSize) weights_row[s] = 0.f;
    }
    if (visible == 0) {
      for (int d = lane; d < shape.value_dim; d += kWarpSize) out_head[d] = from_float<T>(0.f);
      continue;
    }
    const T* query_head = query + query_row * shape.query_stride + head * shape.key_dim;
    for (int d = lane; d < shape.key_dim; d += kWarpSize) {
      warp_query[d] = to_float(query_head[d]) * scale;
    }
    __syncwarp();
    float max_score = -INFINITY;
    for (int s = lane; s < visible; s += kWarpSize) {
      float score = 0.f;
      for (int d = 0; d < shape.key_dim; ++d) score += warp_query[d] * keys_t[d * pitch + s];
      warp_scores[s] = score;
      max_score = fmaxf(max_score, score);
    }
    max_score = warp_max(max_score);
    float total = 0.f;
    for (int s = lane; s < visible; s += kWarpSize) {
      const float e = expf(warp_scores[s] - max_score);
      warp_scores[s] = e;
      total += e;
    }
    const float inverse_total = 1.f / warp_sum(total);
    for (int s = lane; s < visible; s += kWarpSize) {
      const float probability = warp_scores[s] * inverse_total;
      warp_scores[s] = probability;
      if (weights_row != nullptr) weights_row[s] = probability;
    }
    __syncwarp();
    for (int d = lane; d < shape.value_dim; d += kWarpSize) {
      float sum = 0.f;
      for (int s = 0; s < visible; ++s) sum += warp_scores[s] * values_s[s * shape.value_dim + d];
      out_head[d] = from_float<T>(sum);
    }
    __syncwarp();  // the next query rewrites warp_query and warp_scores
  }
}

// The odd row pitch of the transposed keys (conflict-free when lanes read consecutive keys).
int staged_pitch(const AttentionShape& shape) {
  return static_cast<int>(shape.table_width) | 1;
}

// Shared memory of attention_staged_kernel: keys [key_dim][pitch], values [S][value_dim], and
// each warp's query [key_dim] and scores [pitch], all float.
size_t attention_staged_bytes(const AttentionShape& shape) {
  const size_t pitch = staged_pitch(shape);
  return sizeof(float) * (shape.key_dim * pitch + shape.table_width * shape.value_dim +
                          kStagedWarps * (shape.key_dim + pitch));
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
  // Several queries per row share their keys: stage them once per (head, row) when they fit.
  const size_t staged_bytes = attention_staged_bytes(shape);
  if (shape.steps > 1 && staged_bytes <= max_shared_memory_per_block()) {
    const dim3 grid(static_cast<unsigned>(shape.rows), static_cast<unsigned>(shape.heads));
    dispatch_float_type(type, [&](auto tag) {
      using T = decltype(tag);
      if (staged_bytes > kDefaultSharedMemoryPerBlock) {
        XLATE_CUDA_CHECK(cudaFuncSetAttribute(attention_staged_kernel<T>,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(staged_bytes)));
      }
      attention_staged_kernel<T><<<grid, kStagedWarps * kWarpSize, staged_bytes, stream>>>(
          static_cast<T*>(out), weights, static_cast<const T*>(query),
          static_cast<const T*>(keys), static_cast<const T*>(values), key_rows, key_lengths,
          shape, scale, staged_pitch(shape));
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
