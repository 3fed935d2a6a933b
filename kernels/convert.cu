#include <cstdint>
#include <limits>

#include "kernels/convert.h"
#include "kernels/runtime/cuda_runtime.h"
#include "kernels/device_math.cuh"

namespace xlate::kernels {
namespace {

// Each thread converts kPerThread elements of the packed output, blockDim.x apart (coalesced,
// their loads in flight together). `contiguous`: the input is packed too (the plain convert,
// whole weight matrices), so no division finds an element; else Index (32-bit where the count
// allows: a 64-bit division costs several times more) finds its matrix, row and column.
constexpr int kThreads = 256;
constexpr int kPerThread = 4;

template <typename Index, typename To, typename From>
__global__ void convert_matrices_kernel(To* out, const From* inp, Index rows, Index cols,
                                        int64_t ld, int64_t stride, Index count,
                                        bool contiguous) {
  const Index first = static_cast<Index>(blockIdx.x) * (kThreads * kPerThread) + threadIdx.x;
  float values[kPerThread];
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const Index i = first + k * kThreads;
    if (i >= count) break;
    int64_t source = i;
    if (!contiguous) {
      const Index row = i / cols, col = i - row * cols;  // row over all matrices
      const Index matrix = row / rows, row_in_matrix = row - matrix * rows;
      source = matrix * stride + row_in_matrix * ld + col;
    }
    values[k] = to_float(inp[source]);
  }
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const Index i = first + k * kThreads;
    if (i >= count) break;
    out[i] = from_float<To>(values[k]);
  }
}

}  // namespace

void convert_matrices(void* out, ElementType out_type, const void* inp, ElementType inp_type,
                      int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride,
                      Stream stream) {
  const int64_t count = rows * cols * batch;
  if (count == 0) return;
  const bool contiguous = ld == cols && (batch == 1 || stride == rows * cols);
  const unsigned blocks = grid_size(count, kThreads * kPerThread);
  dispatch_float_type(out_type, [&](auto out_tag) {
    dispatch_float_type(inp_type, [&](auto inp_tag) {
      using To = decltype(out_tag);
      using From = decltype(inp_tag);
      if (count <= std::numeric_limits<int32_t>::max()) {
        convert_matrices_kernel<uint32_t, To, From><<<blocks, kThreads, 0, stream>>>(
            static_cast<To*>(out), static_cast<const From*>(inp), static_cast<uint32_t>(rows),
            static_cast<uint32_t>(cols), ld, stride, static_cast<uint32_t>(count), contiguous);
      } else {
        convert_matrices_kernel<int64_t, To, From><<<blocks, kThreads, 0, stream>>>(
            static_cast<To*>(out), static_cast<const From*>(inp), rows, cols, ld, stride, count,
            contiguous);
      }
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
