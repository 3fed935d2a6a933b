#include "kernels/cuda_runtime.h"
#include "kernels/device_math.cuh"
#include "kernels/dropout.h"
#include "kernels/dropout_mask.h"

namespace xlate::kernels {
namespace {

__global__ void dropout_kernel(float* out, const float* inp, int64_t count, DropoutMask mask) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = mask.apply(inp[i], i);
  }
}

__global__ void dropout_relu_backward_kernel(float* dinp, const float* dout,
                                             const float* relu_out, int64_t count,
                                             DropoutMask mask) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dinp[i] = relu_out[i] > 0.f ? mask.apply(dout[i], i) : 0.f;
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
  dropout_kernel<<<blocks, 256, 0, stream>>>(out, inp, count, DropoutMask::of(p, key));
  check_last_launch("dropout_kernel");
}

void dropout_relu_backward(float* dinp, const float* dout, const float* relu_out, int64_t count,
                           float p, uint64_t key, Stream stream) {
  if (count == 0) return;
  const unsigned blocks = grid_size(count, 256) < 65535u ? grid_size(count, 256) : 65535u;
  dropout_relu_backward_kernel<<<blocks, 256, 0, stream>>>(dinp, dout, relu_out, count,
                                                           DropoutMask::of(p, key));
  check_last_launch("dropout_relu_backward_kernel");
}

}  // namespace xlate::kernels
