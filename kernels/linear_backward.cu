#include "kernels/column_sums.cuh"
#include "kernels/cuda_runtime.h"
#include "kernels/linear_backward.h"

namespace xlate::kernels {

namespace {

struct RowValue {
  static constexpr int kOutputs = 1;
  const float* x;
  int64_t columns;
  __device__ void operator()(int64_t m, int64_t c, float (&values)[1]) const {
    values[0] = x[m * columns + c];
  }
};

__global__ void relu_backward_kernel(float* dinp, const float* dout, const float* out,
                                     int64_t count) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dinp[i] = out[i] > 0.f ? dout[i] : 0.f;
  }
}

}  // namespace

int64_t column_sums_workspace_floats(int64_t rows, int64_t columns) {
  return column_sums_partials_floats(rows, columns, RowValue::kOutputs);
}

void add_column_sums(float* sums, const float* x, int64_t rows, int64_t columns,
                     float* workspace, Stream stream) {
  add_column_sums_of({sums}, rows, columns, RowValue{x, columns}, workspace, stream);
  check_last_launch("add_column_sums");
}

void relu_backward(float* dinp, const float* dout, const float* out, int64_t count,
                   Stream stream) {
  if (count == 0) return;
  const unsigned blocks = grid_size(count, 256) < 65535u ? grid_size(count, 256) : 65535u;
  relu_backward_kernel<<<blocks, 256, 0, stream>>>(dinp, dout, out, count);
  check_last_launch("relu_backward_kernel");
}

}  // namespace xlate::kernels
