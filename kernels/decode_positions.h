// The row tables of one decoding call, computed on the device (engine/ops/ops.h,
// decode_positions, has the definition): nothing is uploaded per decoding step. CUDA-free.
#pragma once

#include <cstdint>

#include "kernels/element_type.h"

namespace xlate::kernels {

// row_table int32 [>= rows, table_width]; cache_rows int32 [rows·steps]; key_lengths,
// row_slots, row_positions int32 [rows]; slot_blocks int32 [slots, blocks_per_slot], the block
// table of each cache slot (blocks of block_positions pool rows).
void decode_positions(int32_t* row_table, int32_t* cache_rows, int32_t* key_lengths,
                      const int32_t* row_slots, const int32_t* row_positions,
                      const int32_t* slot_blocks, int64_t rows, int64_t steps,
                      int64_t table_width, int64_t blocks_per_slot, int64_t length,
                      int64_t block_positions, Stream stream);

}  // namespace xlate::kernels
