#include "kernels/column_sums.cuh"
#include "kernels/runtime/cuda_runtime.h"
#include "kernels/linear_backward.h"

namespace xlate::kernels {

namespace {

template <typename T>
struct RowValue {
  static constexpr int kOutputs = 1;
  const T* x;
  int64_t columns;
  __device__ void operator()(int64_t m, int64_t c, float (&values)[1]) const {
    values[0] = to_float(x[m * columns + c]);
  }
};

template <typename T>
__global__ void relu_backward_kernel(T* dinp, const T* dout, const T* out, int64_t count) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dinp[i] = to_float(out[i]) > 0.f ? dout[i] : from_float<T>(0.f);
  }
}

}  // namespace

int64_t column_sums_workspace_floats(int64_t rows, int64_t columns) {
  return column_sums_partials_floats(rows, columns, RowValue<float>::kOutputs);
}

void add_column_sums(float* sums, const void* x, int64_t rows, int64_t columns,
                     float* workspace, ElementType type, Stream stream) {
  dispatch_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    add_column_sums_of({sums}, rows, columns, RowValue<T>{static_cast<const T*>(x), columns},
                       workspace, stream);
  });
  check_last_launch("add_column_sums");
}

void relu_backward(void* dinp, const void* dout, const void* out, int64_t count,
                   ElementType type, Stream stream) {
  if (count == 0) return;
  const unsigned blocks = grid_size(count, 256) < 65535u ? grid_size(count, 256) : 65535u;
  dispatch_float_type(type, [&](auto tag) {
    using T = decltype(tag);
    relu_backward_kernel<T><<<blocks, 256, 0, stream>>>(
        static_cast<T*>(dinp), static_cast<const T*>(dout), static_cast<const T*>(out), count);
  });
  check_last_launch("relu_backward_kernel");
}

}  // namespace xlate::kernels
