// Element type conversion on the device (float32 <-> float16 <-> bfloat16, round to nearest
// even), used to store weights in the compute dtype chosen at run time, and to round a float32
// product's operands to bfloat16 (kernels/runtime/gemm.cc).
#pragma once

#include <cstdint>

#include "kernels/element_type.h"

namespace xlate::kernels {

void convert(void* out, ElementType out_type, const void* inp, ElementType inp_type, int64_t count,
             Stream stream);

// `batch` row-major [rows, cols] matrices of `inp`, `stride` elements apart with rows `ld`
// elements apart (views: one head's columns, one block of a batch), into `out` packed:
// out[(b · rows + r) · cols + c] = inp[b · stride + r · ld + c].
void convert_matrices(void* out, ElementType out_type, const void* inp, ElementType inp_type,
                      int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride,
                      Stream stream);

}  // namespace xlate::kernels
