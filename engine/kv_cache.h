// Incremental-decoding state: one typed cache per decoder layer.
// Legend: R rows being decoded (sentences x beams), B source sentences, S_max the decoding
// capacity in positions, S_src the padded source length, C = d_model.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/tensor.h"

namespace xlate {

struct DecoderLayerCache {
  Tensor self_keys;     // [R_capacity, S_max, C], grows by one position per step
  Tensor self_values;   // [R_capacity, S_max, C]
  Tensor cross_keys;    // [B, S_src, C], computed once from the encoder output
  Tensor cross_values;  // [B, S_src, C]
};

struct DecoderState {
  std::vector<DecoderLayerCache> layers;
  Tensor row_sentence;    // int32 [R]: the source sentence each row belongs to
  Tensor source_lengths;  // int32 [B]
  int64_t rows = 0;       // R, live rows (<= R_capacity)
  int64_t length = 0;     // positions already in the self-attention caches
};

}  // namespace xlate
