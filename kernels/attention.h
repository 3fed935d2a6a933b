// Multi-head scaled dot-product attention over rows of a key / value table, the CUDA side of the
// engine's attention_forward (engine/ops/ops.h has the full contract). Serves the encoder (T = S,
// padding mask), decoder self-attention over the KV cache (T = 1, causal) and cross-attention,
// with the beams' cache rows addressed through `key_rows` so that reordering beams copies
// nothing.
// One query per row (decoding) runs a block per query; several (the encoder, training) stage
// each row's keys and values of a head in shared memory once, where they fit the device's.
//
// Shapes: out [N, T, h·d_v]; query [N, T, h·d_k]; keys [R, key_stride], values [R, value_stride]
// (head h at columns h·d_k / h·d_v); key_rows int32 [N, S]; key_lengths int32 [N].
// Query t of row n attends to key positions s < key_lengths[n], or when causal
// s <= key_lengths[n] - T + t. A query with no visible key gets zeros.
// weights: null, or float32 [N, h, T, S] receiving the attention probabilities (0 at positions a
// query does not see); alignments ask for them, decoding never does.
#pragma once

#include <cstdint>

#include "kernels/element_type.h"

namespace xlate::kernels {

constexpr int kMaxAttentionHeadDim = 256;

struct AttentionShape {
  int64_t rows = 0;         // N
  int64_t steps = 0;        // T
  int64_t table_width = 0;  // S
  int heads = 0;
  int key_dim = 0;    // d_k <= kMaxAttentionHeadDim
  int value_dim = 0;  // d_v <= kMaxAttentionHeadDim
  int64_t query_stride = 0;  // elements from one query row to the next (>= h·d_k)
  int64_t key_stride = 0;
  int64_t value_stride = 0;
  bool causal = false;
};

void attention_forward(void* out, float* weights, const void* query, const void* keys,
                       const void* values,
                       const int32_t* key_rows, const int32_t* key_lengths,
                       const AttentionShape& shape, ElementType type, Stream stream);

}  // namespace xlate::kernels
