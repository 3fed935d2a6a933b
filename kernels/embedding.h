// out[N, T, C] = table[tokens[n, t]] * scale + positions[position_offset + t], computed in float32.
// tokens: int32 [N, T] on the device; table [V, C], positions [P, C] and out share one element
// type. A token outside [0, V) embeds as zeros plus its position (the caller validates ids).
#pragma once

#include <cstdint>

#include "kernels/element_type.h"

namespace xlate::kernels {

void embedding_forward(void* out, const int32_t* tokens, const void* table, const void* positions,
                       int64_t rows, int64_t steps, int64_t channels, int64_t vocabulary,
                       float scale, int64_t position_offset, ElementType type, Stream stream);

}  // namespace xlate::kernels
