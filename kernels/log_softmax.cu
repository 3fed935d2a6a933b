#include <cfloat>

#include "kernels/runtime/cuda_runtime.h"
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

}  // namespace xlate::kernels
