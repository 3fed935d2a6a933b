#include <cfloat>
#include <climits>
#include <stdexcept>

#include "kernels/runtime/cuda_runtime.h"
#include "kernels/device_math.cuh"
#include "kernels/log_softmax_top_k.h"

namespace xlate::kernels {
namespace {

constexpr int kPartThreads = 128;
// A part of a row is at least this many logits (16 per thread); a row has at most 32 parts so
// that one warp merges them.
constexpr int64_t kMinPartLogits = 2048;
constexpr int kMaxParts = kWarpSize;

int64_t parts_per_row(int64_t vocabulary) {
  const int64_t parts = (vocabulary + kMinPartLogits - 1) / kMinPartLogits;
  return parts < kMaxParts ? parts : kMaxParts;
}

size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

// Where the parts' results live in the workspace: softmax partials [N, P] and the k best
// (logit, id) of each part [N, P, k], best first.
struct PartResults {
  float* max;
  float* sum;  // Σ exp(logit - max) over the part
  float* values;
  int32_t* ids;

  PartResults(void* workspace, int64_t rows, int64_t parts, int k) {
    char* bytes = static_cast<char*>(workspace);
    const size_t partials = aligned(sizeof(float) * rows * parts);
    const size_t candidates = aligned(sizeof(float) * rows * parts * k);
    max = reinterpret_cast<float*>(bytes);
    sum = reinterpret_cast<float*>(bytes + partials);
    values = reinterpret_cast<float*>(bytes + 2 * partials);
    ids = reinterpret_cast<int32_t*>(bytes + 2 * partials + candidates);
  }
  static size_t bytes(int64_t rows, int64_t parts, int k) {
    return 2 * aligned(sizeof(float) * rows * parts) + 2 * aligned(sizeof(float) * rows * parts * k);
  }
};

// The ranking: larger logit first, then the smaller id.
__device__ __forceinline__ bool ranks_before(float value, int32_t id, float other_value,
                                             int32_t other_id) {
  return value > other_value || (value == other_value && id < other_id);
}

// A sorted list of the K best (logit, id) one thread has seen, in registers (K is a template
// argument so that every index is known at compile time).
template <int K>
struct BestList {
  float values[K];
  int32_t ids[K];

  __device__ void clear() {
#pragma unroll
    for (int j = 0; j < K; ++j) {
      values[j] = -INFINITY;
      ids[j] = INT32_MAX;
    }
  }
  __device__ void offer(float value, int32_t id) {
    if (!ranks_before(value, id, values[K - 1], ids[K - 1])) return;
#pragma unroll
    for (int j = 0; j < K; ++j) {
      if (ranks_before(value, id, values[j], ids[j])) {
        const float held_value = values[j];
        const int32_t held_id = ids[j];
        values[j] = value;
        ids[j] = id;
        value = held_value;
        id = held_id;
      }
    }
  }
  __device__ void drop_first() {
#pragma unroll
    for (int j = 0; j + 1 < K; ++j) {
      values[j] = values[j + 1];
      ids[j] = ids[j + 1];
    }
    values[K - 1] = -INFINITY;
    ids[K - 1] = INT32_MAX;
  }
};

// The k best of the union of a warp's lists: lane j < k gets the j-th. k rounds of a warp-wide
// argmax over the lists' heads (equal heads, only ever copies of the padding entry, go to the
// smaller lane, so that every lane agrees on one winner), which then drops its head. Consumes
// the lists.
template <int K>
__device__ void warp_best(BestList<K>& list, int k, float* value, int32_t* id) {
  const int lane = threadIdx.x % kWarpSize;
  for (int round = 0; round < k; ++round) {
    float best_value = list.values[0];
    int32_t best_id = list.ids[0], owner = lane;
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
      const float other_value = __shfl_xor_sync(0xffffffffu, best_value, offset);
      const int32_t other_id = __shfl_xor_sync(0xffffffffu, best_id, offset);
      const int32_t other_owner = __shfl_xor_sync(0xffffffffu, owner, offset);
      if (ranks_before(other_value, other_id, best_value, best_id) ||
          (other_value == best_value && other_id == best_id && other_owner < owner)) {
        best_value = other_value;
        best_id = other_id;
        owner = other_owner;
      }
    }
    if (lane == round) {
      *value = best_value;
      *id = best_id;
    }
    if (lane == owner) list.drop_first();
  }
}

// (max, Σ exp(x - max)) of two sets, merged.
__device__ __forceinline__ void merge_partials(float& max, float& sum, float other_max,
                                               float other_sum) {
  const float merged = fmaxf(max, other_max);
  sum = sum * expf(max - merged) + other_sum * expf(other_max - merged);
  max = merged;
}

__device__ __forceinline__ void warp_merge_partials(float& max, float& sum) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    merge_partials(max, sum, __shfl_xor_sync(0xffffffffu, max, offset),
                   __shfl_xor_sync(0xffffffffu, sum, offset));
  }
}

// Grid (rows, parts), kPartThreads threads. One pass over the part: each thread keeps an online
// max / exp-sum and its K best; warps, then warp 0, merge them.
template <typename T, int K>
__global__ void top_k_part_kernel(PartResults results, const T* logits, int64_t vocabulary,
                                  int64_t part_logits, int k) {
  constexpr int kWarps = kPartThreads / kWarpSize;
  __shared__ float warp_max[kWarps], warp_sum[kWarps];
  __shared__ float warp_values[kWarps * K];
  __shared__ int32_t warp_ids[kWarps * K];
  const int64_t n = blockIdx.x, part = blockIdx.y, parts = gridDim.y;
  const int64_t begin = part * part_logits;
  const int64_t end = begin + part_logits < vocabulary ? begin + part_logits : vocabulary;
  const T* row = logits + n * vocabulary;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;

  float max = -FLT_MAX, sum = 0.f;
  BestList<K> list;
  list.clear();
  for (int64_t v = begin + threadIdx.x; v < end; v += kPartThreads) {
    const float logit = to_float(row[v]);
    if (logit > max) {
      sum = sum * expf(max - logit) + 1.f;
      max = logit;
    } else {
      sum += expf(logit - max);
    }
    list.offer(logit, static_cast<int32_t>(v));
  }
  warp_merge_partials(max, sum);
  float value;
  int32_t id;
  warp_best(list, k, &value, &id);
  if (lane == 0) {
    warp_max[warp] = max;
    warp_sum[warp] = sum;
  }
  if (lane < k) {
    warp_values[warp * K + lane] = value;
    warp_ids[warp * K + lane] = id;
  }
  __syncthreads();
  if (warp != 0) return;
  max = lane < kWarps ? warp_max[lane] : -FLT_MAX;
  sum = lane < kWarps ? warp_sum[lane] : 0.f;
  warp_merge_partials(max, sum);
  list.clear();
  for (int w = 0; w < kWarps; ++w) {
    if (lane < k) list.offer(warp_values[w * K + lane], warp_ids[w * K + lane]);
  }
  warp_best(list, k, &value, &id);
  const int64_t slot = n * parts + part;
  if (lane == 0) {
    results.max[slot] = max;
    results.sum[slot] = sum;
  }
  if (lane < k) {
    results.values[slot * k + lane] = value;
    results.ids[slot * k + lane] = id;
  }
}

// Grid rows, one warp each: lane p < P holds part p's partials and candidates.
template <int K>
__global__ void top_k_merge_kernel(float* top_values, int32_t* top_indices,
                                   const float* row_offsets, PartResults results, int parts,
                                   int k) {
  const int64_t n = blockIdx.x;
  const int lane = threadIdx.x;
  const int64_t first = n * parts;
  float max = lane < parts ? results.max[first + lane] : -FLT_MAX;
  float sum = lane < parts ? results.sum[first + lane] : 0.f;
  warp_merge_partials(max, sum);
  BestList<K> list;
  list.clear();
  for (int64_t c = lane; c < static_cast<int64_t>(parts) * k; c += kWarpSize) {
    list.offer(results.values[first * k + c], results.ids[first * k + c]);
  }
  float value;
  int32_t id;
  warp_best(list, k, &value, &id);
  if (lane < k) {
    const float shift = (row_offsets != nullptr ? row_offsets[n] : 0.f) - max - logf(sum);
    top_values[n * k + lane] = value + shift;
    top_indices[n * k + lane] = id;
  }
}

template <typename T, int K>
void launch_top_k(float* top_values, int32_t* top_indices, const T* logits,
                  const float* row_offsets, int64_t rows, int64_t vocabulary, int k,
                  void* workspace, Stream stream) {
  const int64_t parts = parts_per_row(vocabulary);
  const int64_t part_logits = (vocabulary + parts - 1) / parts;
  const PartResults results(workspace, rows, parts, k);
  const dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>(parts));
  top_k_part_kernel<T, K><<<grid, kPartThreads, 0, stream>>>(results, logits, vocabulary,
                                                             part_logits, k);
  check_last_launch("top_k_part_kernel");
  top_k_merge_kernel<K><<<static_cast<unsigned>(rows), kWarpSize, 0, stream>>>(
      top_values, top_indices, row_offsets, results, static_cast<int>(parts), k);
  check_last_launch("top_k_merge_kernel");
}

}  // namespace

size_t log_softmax_top_k_workspace_bytes(int64_t rows, int64_t vocabulary, int k) {
  return PartResults::bytes(rows, parts_per_row(vocabulary), k);
}

void log_softmax_top_k(float* top_values, int32_t* top_indices, const void* logits,
                       const float* row_offsets, int64_t rows, int64_t vocabulary, int k,
                       void* workspace, ElementType type, Stream stream) {
  if (k < 1 || k > kMaxTopK || k > vocabulary) {
    throw std::logic_error("log_softmax_top_k: k must be in [1, min(kMaxTopK, V)]");
  }
  if (rows == 0) return;
  // The list capacity K is the smallest of 8, 12, 16, 32 that holds k: beam 4 (k = 2·4 + 1)
  // keeps 12 candidates per thread in registers, not 32.
  dispatch_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    const T* typed = static_cast<const T*>(logits);
    if (k <= 8) {
      launch_top_k<T, 8>(top_values, top_indices, typed, row_offsets, rows, vocabulary, k,
                         workspace, stream);
    } else if (k <= 12) {
      launch_top_k<T, 12>(top_values, top_indices, typed, row_offsets, rows, vocabulary, k,
                          workspace, stream);
    } else if (k <= 16) {
      launch_top_k<T, 16>(top_values, top_indices, typed, row_offsets, rows, vocabulary, k,
                          workspace, stream);
    } else {
      launch_top_k<T, kMaxTopK>(top_values, top_indices, typed, row_offsets, rows, vocabulary,
                                k, workspace, stream);
    }
  });
}

}  // namespace xlate::kernels
