// out[r, :] = inp[indices[r], :] for r < rows: the decoder's beam reordering gathers the rows of
// its row table this way (the cached keys and values themselves never move).
// Rows are `row_bytes` bytes (any element type; a multiple of 2). `out` must not alias `inp`.
#pragma once

#include <cstdint>

#include "kernels/element_type.h"

namespace xlate::kernels {

void gather_rows(void* out, const void* inp, const int32_t* indices, int64_t rows,
                 int64_t row_bytes, Stream stream);

// out[indices[r], :] = inp[r, :] for r < rows (the indices distinct): appends new keys/values to
// their KV-cache rows in one launch. Input rows start inp_stride_bytes apart (>= row_bytes, even:
// the keys and values may be columns of a wider fused-projection output).
void scatter_rows(void* out, const void* inp, const int32_t* indices, int64_t rows,
                  int64_t row_bytes, int64_t inp_stride_bytes, Stream stream);

}  // namespace xlate::kernels
