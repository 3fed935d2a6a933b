#include <cfloat>

#include "kernels/cuda_runtime.h"
#include "kernels/device_math.cuh"
#include "kernels/log_softmax.h"

namespace xlate::kernels {
namespace {

constexpr int kThreads = 256;

// max and log Σ exp(x - max) of one row, shared by every thread of the block.
template <typename T>
__device__ void row_log_normaliser(const T* row, int64_t vocabulary, float* scratch,
                                   float* row_max, float* log_sum) {
  float best = -FLT_MAX;
  for (int64_t v = threadIdx.x; v < vocabulary; v += blockDim.x) {
    best = fmaxf(best, to_float(row[v]));
  }
  best = block_max(best, scratch);
  float sum = 0.f;
  for (int64_t v = threadIdx.x; v < vocabulary; v += blockDim.x) {
    sum += expf(to_float(row[v]) - best);
  }
  sum = block_sum(sum, scratch);
  *row_max = best;
  *log_sum = logf(sum);
}

template <typename T>
__global__ void log_softmax_forward_kernel(T* out, const T* inp, int64_t vocabulary) {
  __shared__ float scratch[32];
  const int64_t offset = static_cast<int64_t>(blockIdx.x) * vocabulary;
  float row_max, log_sum;
  row_log_normaliser(inp + offset, vocabulary, scratch, &row_max, &log_sum);
  for (int64_t v = threadIdx.x; v < vocabulary; v += blockDim.x) {
    out[offset + v] = from_float<T>(to_float(inp[offset + v]) - row_max - log_sum);
  }
}

// (value, id) order of the top-k: larger value first, then smaller id.
__device__ __forceinline__ bool ranks_before(float value, int32_t id, float other_value,
                                             int32_t other_id) {
  return value > other_value || (value == other_value && id < other_id);
}

// One block per row. Every thread keeps its own sorted top-k of the ids it visits; then k
// rounds of a block-wide argmax over the threads' current heads pick the row's top-k in order.
template <typename T>
__global__ void log_softmax_top_k_kernel(float* top_values, int32_t* top_indices, const T* logits,
                                         const float* row_offsets, int64_t vocabulary, int k) {
  __shared__ float scratch[32];
  __shared__ float warp_values[kThreads / kWarpSize];
  __shared__ int32_t warp_ids[kThreads / kWarpSize];
  __shared__ int32_t warp_owners[kThreads / kWarpSize];
  __shared__ int32_t winner_thread;
  const int64_t n = blockIdx.x;
  const T* row = logits + n * vocabulary;
  float row_max, log_sum;
  row_log_normaliser(row, vocabulary, scratch, &row_max, &log_sum);
  const float shift = (row_offsets != nullptr ? row_offsets[n] : 0.f) - row_max - log_sum;

  float values[kMaxTopK];
  int32_t ids[kMaxTopK];
  int held = 0;
  for (int64_t v = threadIdx.x; v < vocabulary; v += blockDim.x) {
    const float value = to_float(row[v]) + shift;
    const int32_t id = static_cast<int32_t>(v);
    if (held == k && !ranks_before(value, id, values[k - 1], ids[k - 1])) continue;
    int slot = held < k ? held++ : k - 1;
    while (slot > 0 && ranks_before(value, id, values[slot - 1], ids[slot - 1])) {
      values[slot] = values[slot - 1];
      ids[slot] = ids[slot - 1];
      --slot;
    }
    values[slot] = value;
    ids[slot] = id;
  }

  int head = 0;  // this thread's next candidate
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  for (int round = 0; round < k; ++round) {
    float value = head < held ? values[head] : -INFINITY;
    int32_t id = head < held ? ids[head] : INT32_MAX;
    int32_t owner = threadIdx.x;
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
      const float other_value = __shfl_xor_sync(0xffffffffu, value, offset);
      const int32_t other_id = __shfl_xor_sync(0xffffffffu, id, offset);
      const int32_t other_owner = __shfl_xor_sync(0xffffffffu, owner, offset);
      if (ranks_before(other_value, other_id, value, id)) {
        value = other_value;
        id = other_id;
        owner = other_owner;
      }
    }
    if (lane == 0) {
      warp_values[warp] = value;
      warp_ids[warp] = id;
      warp_owners[warp] = owner;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      int best = 0;
      for (int w = 1; w < kThreads / kWarpSize; ++w) {
        if (ranks_before(warp_values[w], warp_ids[w], warp_values[best], warp_ids[best])) best = w;
      }
      top_values[n * k + round] = warp_values[best];
      top_indices[n * k + round] = warp_ids[best];
      winner_thread = warp_owners[best];
    }
    __syncthreads();
    if (threadIdx.x == winner_thread) ++head;
    __syncthreads();
  }
}

}  // namespace

void log_softmax_forward(void* out, const void* inp, int64_t rows, int64_t vocabulary,
                         ElementType type, Stream stream) {
  if (rows == 0) return;
  dispatch_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    log_softmax_forward_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        static_cast<T*>(out), static_cast<const T*>(inp), vocabulary);
  });
  check_last_launch("log_softmax_forward_kernel");
}

void log_softmax_top_k(float* top_values, int32_t* top_indices, const void* logits,
                       const float* row_offsets, int64_t rows, int64_t vocabulary, int k,
                       ElementType type, Stream stream) {
  if (k < 1 || k > kMaxTopK || k > vocabulary) {
    throw std::logic_error("log_softmax_top_k: k must be in [1, min(kMaxTopK, V)]");
  }
  if (rows == 0) return;
  dispatch_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    log_softmax_top_k_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        top_values, top_indices, static_cast<const T*>(logits), row_offsets, vocabulary, k);
  });
  check_last_launch("log_softmax_top_k_kernel");
}

}  // namespace xlate::kernels
