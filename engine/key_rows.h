// The key_rows table of attention_forward (engine/ops/ops.h) for keys stored batch-major,
// [B, S, C] read as B·S rows: the encoder's self-attention, and every attention of the trainer,
// whose queries and keys are whole padded sequences.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/tensor.h"

namespace xlate {

// int32 [R, S] on the host: query row r reads keys of batch entry batch_of_row[r],
// key_rows[r, s] = batch_of_row[r]·S + s.
Tensor batch_major_key_rows(const std::vector<int32_t>& batch_of_row, int64_t steps);
// The same for query row r reading batch entry r (r < rows).
Tensor batch_major_key_rows(int64_t rows, int64_t steps);

}  // namespace xlate
