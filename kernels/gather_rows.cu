#include <stdexcept>

#include "kernels/runtime/cuda_runtime.h"
#include "kernels/device_math.cuh"
#include "kernels/gather_rows.h"

namespace xlate::kernels {
namespace {

// One block per output row, copying 16-bit words (every element type is a multiple of 2 bytes).
__global__ void gather_rows_kernel(uint16_t* out, const uint16_t* inp, const int32_t* indices,
                                   int64_t row_words) {
  const int64_t r = blockIdx.x;
  const uint16_t* source = inp + static_cast<int64_t>(indices[r]) * row_words;
  for (int64_t i = threadIdx.x; i < row_words; i += blockDim.x) out[r * row_words + i] = source[i];
}

// One block per input row.
__global__ void scatter_rows_kernel(uint16_t* out, const uint16_t* inp, const int32_t* indices,
                                    int64_t row_words, int64_t inp_stride_words) {
  const int64_t r = blockIdx.x;
  uint16_t* destination = out + static_cast<int64_t>(indices[r]) * row_words;
  const uint16_t* source = inp + r * inp_stride_words;
  for (int64_t i = threadIdx.x; i < row_words; i += blockDim.x) destination[i] = source[i];
}

}  // namespace

void gather_rows(void* out, const void* inp, const int32_t* indices, int64_t rows,
                 int64_t row_bytes, Stream stream) {
  if (row_bytes % 2 != 0) throw std::logic_error("gather_rows: row_bytes must be even");
  if (rows == 0 || row_bytes == 0) return;
  gather_rows_kernel<<<static_cast<unsigned>(rows), 256, 0, stream>>>(
      static_cast<uint16_t*>(out), static_cast<const uint16_t*>(inp), indices, row_bytes / 2);
  check_last_launch("gather_rows_kernel");
}

void scatter_rows(void* out, const void* inp, const int32_t* indices, int64_t rows,
                  int64_t row_bytes, int64_t inp_stride_bytes, Stream stream) {
  if (row_bytes % 2 != 0 || inp_stride_bytes % 2 != 0 || inp_stride_bytes < row_bytes) {
    throw std::logic_error("scatter_rows: row_bytes and inp_stride_bytes must be even, stride >= row");
  }
  if (rows == 0 || row_bytes == 0) return;
  scatter_rows_kernel<<<static_cast<unsigned>(rows), 256, 0, stream>>>(
      static_cast<uint16_t*>(out), static_cast<const uint16_t*>(inp), indices, row_bytes / 2,
      inp_stride_bytes / 2);
  check_last_launch("scatter_rows_kernel");
}

}  // namespace xlate::kernels
