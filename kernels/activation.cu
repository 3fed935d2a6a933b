#include "kernels/activation.h"
#include "kernels/runtime/cuda_runtime.h"
#include "kernels/device_math.cuh"

namespace xlate::kernels {
namespace {

template <typename T, PointwiseActivation kActivation>
__global__ void activation_kernel(T* x, int64_t count) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = to_float(x[i]);
    float y;
    if constexpr (kActivation == PointwiseActivation::kSwish) {
      y = v / (1.f + expf(-v));
    } else {
      y = 0.5f * v * (1.f + erff(v * 0.70710678118654752f));  // v · Φ(v)
    }
    x[i] = from_float<T>(y);
  }
}

}  // namespace

void activation_forward(void* x, int64_t count, PointwiseActivation activation, ElementType type,
                        Stream stream) {
  if (count == 0) return;
  const unsigned blocks = grid_size(count, 256) < 65535u ? grid_size(count, 256) : 65535u;
  dispatch_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    if (activation == PointwiseActivation::kSwish) {
      activation_kernel<T, PointwiseActivation::kSwish>
          <<<blocks, 256, 0, stream>>>(static_cast<T*>(x), count);
    } else {
      activation_kernel<T, PointwiseActivation::kGelu>
          <<<blocks, 256, 0, stream>>>(static_cast<T*>(x), count);
    }
  });
  check_last_launch("activation_kernel");
}

}  // namespace xlate::kernels
