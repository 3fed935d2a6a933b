#include "kernels/cuda_runtime.h"
#include "kernels/device_math.cuh"
#include "kernels/dropout.h"
#include "kernels/dropout_mask.h"

namespace xlate::kernels {
namespace {

__global__ void dropout_kernel(float* out, const float* inp, int64_t count, uint32_t threshold,
                               float keep_scale, uint64_t key) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = dropout_keeps(key, i, threshold) ? inp[i] * keep_scale : 0.f;
  }
}

// p = 0 keeps every element: threshold 0 is never used then (keep_all).
__global__ void dropout_relu_backward_kernel(float* dinp, const float* dout,
                                             const float* relu_out, int64_t count,
                                             uint32_t threshold, float keep_scale, uint64_t key,
                                             bool keep_all) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const bool kept = keep_all || dropout_keeps(key, i, threshold);
    dinp[i] = kept && relu_out[i] > 0.f ? (keep_all ? dout[i] : dout[i] * keep_scale) : 0.f;
  }
}

}  // namespace

void dropout_forward(float* out, const float* inp, int64_t count, float p, uint64_t key,
                     Stream stream) {
  if (count == 0) return;
  if (p <= 0.f) {
    if (out != inp) copy_device_to_device(out, inp, static_cast<size_t>(count) * 4, stream);
    return;
  }
  const unsigned blocks = grid_size(count, 256) < 65535u ? grid_size(count, 256) : 65535u;
  dropout_kernel<<<blocks, 256, 0, stream>>>(out, inp, count, dropout_threshold(p),
                                             1.f / (1.f - p), key);
  check_last_launch("dropout_kernel");
}

void dropout_relu_backward(float* dinp, const float* dout, const float* relu_out, int64_t count,
                           float p, uint64_t key, Stream stream) {
  if (count == 0) return;
  const bool keep_all = p <= 0.f;
  const unsigned blocks = grid_size(count, 256) < 65535u ? grid_size(count, 256) : 65535u;
  dropout_relu_backward_kernel<<<blocks, 256, 0, stream>>>(
      dinp, dout, relu_out, count, keep_all ? 0u : dropout_threshold(p),
      keep_all ? 1.f : 1.f / (1.f - p), key, keep_all);
  check_last_launch("dropout_relu_backward_kernel");
}

}  // namespace xlate::kernels
