#include <cmath>

#include "kernels/runtime/cuda_runtime.h"
#include "kernels/device_math.cuh"
#include "kernels/repeat_guards.h"

namespace xlate::kernels {
namespace {

constexpr int kThreads = 128;

// One block per row: the row's history into shared memory (width int32), then one thread per
// history position. The bans wait for every penalty, so that a penalty's read-modify-write of a
// logit cannot undo a ban of the same token.
template <typename T>
__global__ void penalize_repeats_kernel(T* logits, const int32_t* tokens,
                                        const int32_t* history_rows, const int32_t* lengths,
                                        const float* penalties, const int32_t* ngram_sizes,
                                        int64_t vocabulary, int64_t width) {
  extern __shared__ int32_t history[];
  const int64_t r = blockIdx.x;
  const float penalty = penalties[r];
  const int n = ngram_sizes[r];
  if (penalty == 1.f && n == 0) return;
  const int length = lengths[r];
  for (int j = threadIdx.x; j < length; j += blockDim.x) {
    history[j] = tokens[history_rows[r * width + j]];
  }
  __syncthreads();
  T* row = logits + r * vocabulary;
  if (penalty != 1.f) {
    for (int j = threadIdx.x; j < length; j += blockDim.x) {
      if (rules::first_occurrence(history, j)) {
        row[history[j]] =
            from_float<T>(rules::repetition_penalized(to_float(row[history[j]]), penalty));
      }
    }
  }
  __syncthreads();
  if (n == 0) return;
  for (int start = threadIdx.x; start <= length - n; start += blockDim.x) {
    if (rules::completes_repeated_ngram(history, length, start, n)) {
      row[history[start + n - 1]] = from_float<T>(-INFINITY);
    }
  }
}

}  // namespace

void penalize_repeats(void* logits, const int32_t* tokens, const int32_t* history_rows,
                      const int32_t* lengths, const float* penalties,
                      const int32_t* ngram_sizes, int64_t rows, int64_t vocabulary,
                      int64_t width, ElementType type, Stream stream) {
  if (rows == 0) return;
  const size_t shared = static_cast<size_t>(width) * sizeof(int32_t);
  dispatch_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    penalize_repeats_kernel<T><<<static_cast<unsigned>(rows), kThreads, shared, stream>>>(
        static_cast<T*>(logits), tokens, history_rows, lengths, penalties, ngram_sizes,
        vocabulary, width);
  });
  check_last_launch("penalize_repeats_kernel");
}

}  // namespace xlate::kernels
