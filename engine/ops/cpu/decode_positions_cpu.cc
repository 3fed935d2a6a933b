#include "engine/ops/cpu/cpu_ops.h"

namespace xlate::cpu {

void decode_positions(Tensor& row_table, Tensor& cache_rows, Tensor& key_lengths,
                      const Tensor& row_slots, const Tensor& row_positions,
                      const Tensor& slot_blocks, int64_t length, int64_t block_positions) {
  const int64_t rows = key_lengths.numel(), steps = cache_rows.numel() / rows;
  const int64_t width = row_table.dim(1), blocks_per_slot = slot_blocks.dim(1);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t position = row_positions.data<int32_t>()[r] + length;
    const int32_t* blocks =
        slot_blocks.data<int32_t>() + row_slots.data<int32_t>()[r] * blocks_per_slot;
    for (int64_t t = 0; t < steps; ++t) {
      const int64_t p = position + t;
      const auto cache_row =
          static_cast<int32_t>(blocks[p / block_positions] * block_positions + p % block_positions);
      row_table.data<int32_t>()[r * width + p] = cache_row;
      cache_rows.data<int32_t>()[r * steps + t] = cache_row;
    }
    key_lengths.data<int32_t>()[r] = static_cast<int32_t>(position + steps);
  }
}

}  // namespace xlate::cpu
