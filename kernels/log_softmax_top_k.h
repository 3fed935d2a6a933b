// Log-softmax over the vocabulary fused with beam search's top-k selection: the [N, V]
// log-probabilities are never written. Two launches: blocks over (part of a row, row) find each
// part's softmax partials and k best logits; one warp per row merges the parts.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/element_type.h"

namespace xlate::kernels {

constexpr int kMaxTopK = 32;

// Device scratch bytes log_softmax_top_k needs for these sizes (a few KiB per row).
size_t log_softmax_top_k_workspace_bytes(int64_t rows, int64_t vocabulary, int k);

// For every row n: the k ids with the largest logits (ties: the smaller id first), best first,
// as int32 top_indices[N, k], and their log_softmax(logits[n]) + row_offsets[n] as float32
// top_values[N, k] (row_offsets may be nullptr: no offset). Ranking by the logit rather than by
// the rounded shifted value keeps the order exact and the values non-increasing.
// 1 <= k <= min(kMaxTopK, V); workspace holds log_softmax_top_k_workspace_bytes, 256-byte
// aligned. Beam search passes the hypotheses' running scores as row_offsets and k = 2·beam + 1
// (the 2·beam best continuations, plus one for an end token that may be forbidden).
void log_softmax_top_k(float* top_values, int32_t* top_indices, const void* logits,
                       const float* row_offsets, int64_t rows, int64_t vocabulary, int k,
                       void* workspace, ElementType type, Stream stream);

}  // namespace xlate::kernels
