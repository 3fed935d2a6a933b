#include "kernels/convert.h"
#include "kernels/cuda_runtime.h"
#include "kernels/device_math.cuh"

namespace xlate::kernels {
namespace {

template <typename To, typename From>
__global__ void convert_kernel(To* out, const From* inp, int64_t count) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) out[i] = from_float<To>(to_float(inp[i]));
}

}  // namespace

void convert(void* out, ElementType out_type, const void* inp, ElementType inp_type, int64_t count,
             Stream stream) {
  if (count == 0) return;
  constexpr int kThreads = 256;
  dispatch_float_type(out_type, [&](auto out_tag) {
    dispatch_float_type(inp_type, [&](auto inp_tag) {
      using To = decltype(out_tag);
      using From = decltype(inp_tag);
      convert_kernel<To, From><<<grid_size(count, kThreads), kThreads, 0, stream>>>(
          static_cast<To*>(out), static_cast<const From*>(inp), count);
    });
  });
  check_last_launch("convert_kernel");
}

}  // namespace xlate::kernels
