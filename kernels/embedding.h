// out[N, T, C] = table[tokens[n, t]] * scale + positions[position_offset + row_positions[n] + t],
// computed in float32. tokens: int32 [N, T] on the device; row_positions: int32 [N] or null (0);
// table [V, C], positions [P, C] and out share one element type. A token outside [0, V) embeds
// as zeros plus its position, and a position outside [0, P) reads the nearest row of the table
// (the caller validates ids and positions; the kernel only stays inside its tables).
#pragma once

#include <cstdint>

#include "kernels/element_type.h"

namespace xlate::kernels {

struct EmbeddingShape {
  int64_t rows = 0;       // N
  int64_t steps = 0;      // T
  int64_t channels = 0;   // C
  int64_t vocabulary = 0; // V
  int64_t positions = 0;  // P
  int64_t position_offset = 0;
};

void embedding_forward(void* out, const int32_t* tokens, const void* table, const void* positions,
                       const int32_t* row_positions, const EmbeddingShape& shape, float scale,
                       ElementType type, Stream stream);

}  // namespace xlate::kernels
