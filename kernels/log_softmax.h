// Log-softmax over the vocabulary, alone (the engine's log_softmax_forward) and fused with the
// top-k selection of beam search, which then never writes the [N, V] log-probabilities.
#pragma once

#include <cstdint>

#include "kernels/element_type.h"

namespace xlate::kernels {

// out[M, V] = log_softmax(inp[M, V]) along the last axis, in float32 arithmetic; may alias.
void log_softmax_forward(void* out, const void* inp, int64_t rows, int64_t vocabulary,
                         ElementType type, Stream stream);

constexpr int kMaxTopK = 32;

// For every row n: the k largest of log_softmax(logits[n]) + row_offsets[n] (row_offsets may be
// nullptr: no offset), best first, as float32 top_values[N, k] and int32 top_indices[N, k]
// (vocabulary ids). Ties keep the smaller id first. 1 <= k <= min(kMaxTopK, V).
// Beam search passes the hypotheses' running scores as row_offsets and k = 2·beam.
void log_softmax_top_k(float* top_values, int32_t* top_indices, const void* logits,
                       const float* row_offsets, int64_t rows, int64_t vocabulary, int k,
                       ElementType type, Stream stream);

}  // namespace xlate::kernels
