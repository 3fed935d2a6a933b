#include "kernels/convert.h"
#include "kernels/cuda_runtime.h"
#include "kernels/device_math.cuh"

namespace xlate::kernels {
namespace {

// One thread per element of the packed output. `contiguous`: the input is packed too (the plain
// convert, whole weight matrices), so no 64-bit divisions find its element.
template <typename To, typename From>
__global__ void convert_matrices_kernel(To* out, const From* inp, int64_t rows, int64_t cols,
                                        int64_t ld, int64_t stride, int64_t count,
                                        bool contiguous) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  int64_t source = i;
  if (!contiguous) {
    const int64_t row = i / cols, col = i - row * cols;  // row over all matrices
    const int64_t matrix = row / rows, row_in_matrix = row - matrix * rows;
    source = matrix * stride + row_in_matrix * ld + col;
  }
  out[i] = from_float<To>(to_float(inp[source]));
}

}  // namespace

void convert_matrices(void* out, ElementType out_type, const void* inp, ElementType inp_type,
                      int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride,
                      Stream stream) {
  const int64_t count = rows * cols * batch;
  if (count == 0) return;
  const bool contiguous = ld == cols && (batch == 1 || stride == rows * cols);
  constexpr int kThreads = 256;
  dispatch_float_type(out_type, [&](auto out_tag) {
    dispatch_float_type(inp_type, [&](auto inp_tag) {
      using To = decltype(out_tag);
      using From = decltype(inp_tag);
      convert_matrices_kernel<To, From><<<grid_size(count, kThreads), kThreads, 0, stream>>>(
          static_cast<To*>(out), static_cast<const From*>(inp), rows, cols, ld, stride, count,
          contiguous);
    });
  });
  check_last_launch("convert_matrices_kernel");
}

void convert(void* out, ElementType out_type, const void* inp, ElementType inp_type, int64_t count,
             Stream stream) {
  convert_matrices(out, out_type, inp, inp_type, /*rows=*/1, /*cols=*/count, /*ld=*/count,
                   /*batch=*/1, /*stride=*/0, stream);
}

}  // namespace xlate::kernels
