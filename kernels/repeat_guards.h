// The repetition guards of rules/repeat_guards.h on the GPU. CUDA-free.
#pragma once

#include <cstdint>

#include "kernels/element_type.h"
#include "rules/repeat_guards.h"

namespace xlate::kernels {

// The device op over R rows of logits [R, V] (`type`): row r's history is
// tokens[history_rows[r·width + j]] for j < lengths[r] (<= width); penalties float32 [R]
// (1 = none), ngram_sizes int32 [R] (0 = none).
void penalize_repeats(void* logits, const int32_t* tokens, const int32_t* history_rows,
                      const int32_t* lengths, const float* penalties,
                      const int32_t* ngram_sizes, int64_t rows, int64_t vocabulary,
                      int64_t width, ElementType type, Stream stream);

}  // namespace xlate::kernels
