// The log-probabilities of given tokens of each row (a constrained beam search's wanted
// tokens), shifted as log_softmax_top_k shifts its values. CUDA-free.
#pragma once

#include <cstdint>

#include "kernels/element_type.h"

namespace xlate::kernels {

// values[n, j] = log_softmax(logits[n])[tokens[n, j]] + row_offsets[n], -inf where
// tokens[n, j] is -1. values float32 [N, W], logits [N, V] of `type`, tokens int32 [N, W].
void gather_log_probs(float* values, const void* logits, const float* row_offsets,
                      const int32_t* tokens, int64_t rows, int64_t vocabulary, int64_t width,
                      ElementType type, Stream stream);

}  // namespace xlate::kernels
