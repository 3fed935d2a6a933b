#include <cfloat>
#include <cmath>

#include "kernels/runtime/cuda_runtime.h"
#include "kernels/device_math.cuh"
#include "kernels/gather_log_probs.h"

namespace xlate::kernels {
namespace {

constexpr int kThreads = 256;

// One block per row: the row's maximum and sum of exponentials, then a thread per wanted
// token. A row without a wanted token only writes -inf.
template <typename T>
__global__ void gather_log_probs_kernel(float* values, const T* logits, const float* row_offsets,
                                        const int32_t* tokens, int64_t vocabulary,
                                        int64_t width) {
  __shared__ float scratch[kThreads / kWarpSize];
  const int64_t n = blockIdx.x;
  const int32_t* wanted = tokens + n * width;
  float* out = values + n * width;
  bool any = false;
  for (int64_t j = 0; j < width; ++j) any = any || wanted[j] >= 0;
  if (!any) {
    for (int64_t j = threadIdx.x; j < width; j += blockDim.x) out[j] = -INFINITY;
    return;
  }
  const T* row = logits + n * vocabulary;
  float maximum = -FLT_MAX;
  for (int64_t v = threadIdx.x; v < vocabulary; v += blockDim.x) {
    maximum = fmaxf(maximum, to_float(row[v]));
  }
  maximum = block_max(maximum, scratch);
  float sum = 0.f;
  for (int64_t v = threadIdx.x; v < vocabulary; v += blockDim.x) {
    sum += expf(to_float(row[v]) - maximum);
  }
  sum = block_sum(sum, scratch);
  const float shift = row_offsets[n] - maximum - logf(sum);
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
    out[j] = wanted[j] >= 0 ? to_float(row[wanted[j]]) + shift : -INFINITY;
  }
}

}  // namespace

void gather_log_probs(float* values, const void* logits, const float* row_offsets,
                      const int32_t* tokens, int64_t rows, int64_t vocabulary, int64_t width,
                      ElementType type, Stream stream) {
  if (rows == 0 || width == 0) return;
  dispatch_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    gather_log_probs_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        values, static_cast<const T*>(logits), row_offsets, tokens, vocabulary, width);
  });
  check_last_launch("gather_log_probs_kernel");
}

}  // namespace xlate::kernels
