#include "kernels/runtime/cuda_runtime.h"
#include "kernels/device_math.cuh"
#include "kernels/dropout.h"
#include "rules/dropout_mask.h"

namespace xlate::kernels {
namespace {

// Elements of the storage type T, arithmetic in float32 (the mask's product rounded once to T).
template <typename T>
__global__ void dropout_kernel(T* out, const T* inp, int64_t count, rules::DropoutMask mask) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = from_float<T>(mask.apply(to_float(inp[i]), i));
  }
}

template <typename T>
__global__ void dropout_relu_backward_kernel(T* dinp, const T* dout, const T* relu_out,
                                             int64_t count, rules::DropoutMask mask) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dinp[i] = from_float<T>(to_float(relu_out[i]) > 0.f ? mask.apply(to_float(dout[i]), i) : 0.f);
  }
}

}  // namespace

void dropout_forward(void* out, const void* inp, int64_t count, float p, uint64_t key,
                     ElementType type, Stream stream) {
  if (count == 0) return;
  if (p <= 0.f) {
    if (out != inp) {
      copy_device_to_device(out, inp, static_cast<size_t>(count) * element_size(type), stream);
    }
    return;
  }
  const unsigned blocks = grid_size(count, 256) < 65535u ? grid_size(count, 256) : 65535u;
  dispatch_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    dropout_kernel<T><<<blocks, 256, 0, stream>>>(static_cast<T*>(out),
                                                  static_cast<const T*>(inp), count,
                                                  rules::DropoutMask::of(p, key));
  });
  check_last_launch("dropout_kernel");
}

void dropout_relu_backward(void* dinp, const void* dout, const void* relu_out, int64_t count,
                           float p, uint64_t key, ElementType type, Stream stream) {
  if (count == 0) return;
  const unsigned blocks = grid_size(count, 256) < 65535u ? grid_size(count, 256) : 65535u;
  dispatch_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    dropout_relu_backward_kernel<T><<<blocks, 256, 0, stream>>>(
        static_cast<T*>(dinp), static_cast<const T*>(dout), static_cast<const T*>(relu_out),
        count, rules::DropoutMask::of(p, key));
  });
  check_last_launch("dropout_relu_backward_kernel");
}

}  // namespace xlate::kernels
