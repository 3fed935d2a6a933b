#include "kernels/runtime/cuda_runtime.h"
#include "kernels/decode_positions.h"

namespace xlate::kernels {
namespace {

// One thread per (row, new position).
__global__ void decode_positions_kernel(int32_t* row_table, int32_t* cache_rows,
                                        int32_t* key_lengths, const int32_t* row_slots,
                                        const int32_t* row_positions,
                                        const int32_t* slot_blocks, int64_t rows, int64_t steps,
                                        int64_t table_width, int64_t blocks_per_slot,
                                        int64_t length, int64_t block_positions) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * steps) return;
  const int64_t r = i / steps, t = i % steps;
  const int64_t position = row_positions[r] + length + t;
  const int32_t block = slot_blocks[row_slots[r] * blocks_per_slot + position / block_positions];
  const auto cache_row = static_cast<int32_t>(block * block_positions + position % block_positions);
  row_table[r * table_width + position] = cache_row;
  cache_rows[i] = cache_row;
  if (t == 0) key_lengths[r] = static_cast<int32_t>(position + steps);
}

}  // namespace

void decode_positions(int32_t* row_table, int32_t* cache_rows, int32_t* key_lengths,
                      const int32_t* row_slots, const int32_t* row_positions,
                      const int32_t* slot_blocks, int64_t rows, int64_t steps,
                      int64_t table_width, int64_t blocks_per_slot, int64_t length,
                      int64_t block_positions, Stream stream) {
  const int64_t count = rows * steps;
  if (count == 0) return;
  constexpr int kThreads = 256;
  decode_positions_kernel<<<static_cast<unsigned>((count + kThreads - 1) / kThreads), kThreads, 0,
                            stream>>>(row_table, cache_rows, key_lengths, row_slots,
                                      row_positions, slot_blocks, rows, steps, table_width,
                                      blocks_per_slot, length, block_positions);
  check_last_launch("decode_positions_kernel");
}

}  // namespace xlate::kernels
