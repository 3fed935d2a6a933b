// The typed KV cache of one decoder layer (engine/decoder_state.h holds one per layer and the
// rows that use them).
// Legend: R live rows (sentences x beams), R_cap the row capacity, B source sentences,
// S_max the decoding capacity in positions, S_src the padded source length, C = d_model.
#pragma once

#include "engine/tensor.h"

namespace xlate {

struct DecoderLayerCache {
  // Keys and values side by side in each row (columns [0, h·d_k) and [h·d_k, h·d_k + h·d_v)):
  // one projection GEMM and one scatter write both.
  // Time-major: entry [s, p] holds position s of whichever row occupied physical slot p when
  // position s was decoded. Each position is written once and never moved.
  Tensor self_key_values;   // [S_max, R_cap, h·d_k + h·d_v]
  Tensor cross_key_values;  // [B, S_src, h·d_k + h·d_v], computed once from the encoder output
};


}  // namespace xlate
