// Incremental-decoding state: one typed cache per decoder layer.
// Legend: R live rows (sentences x beams), R_cap the row capacity, B source sentences,
// S_max the decoding capacity in positions, S_src the padded source length, C = d_model.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/tensor.h"

namespace xlate {

struct DecoderLayerCache {
  // Time-major: entry [s, p] holds position s of whichever row occupied physical slot p when
  // position s was decoded. Each position is written once and never moved.
  Tensor self_keys;     // [S_max, R_cap, h·d_k]
  Tensor self_values;   // [S_max, R_cap, h·d_v]
  Tensor cross_keys;    // [B, S_src, h·d_k], computed once from the encoder output
  Tensor cross_values;  // [B, S_src, h·d_v]
};

struct DecoderState {
  std::vector<DecoderLayerCache> layers;
  // Batch decoding (start_decoding), on the model's device so that a GPU step needs no upload:
  // row_table [R_cap, S_max] int32, entry [r, s] = s·R_cap + the slot that holds position s of
  // live row r, i.e. the row of the time-major cache viewed as [S_max·R_cap, C]. Beam
  // reordering gathers this table's rows (shared by every layer), not the cached keys and
  // values. cross_rows [R, S_src] and cross_lengths [R]: the source keys of each row's sentence.
  Tensor row_table;
  Tensor cross_rows, cross_lengths;
  // Slot decoding (start_slots), on the host: ancestry[s * R_cap + r] is the physical slot
  // that holds position s of row r.
  std::vector<int32_t> ancestry;
  std::vector<int32_t> row_sentence;    // [R]: the source sentence of each live row
  std::vector<int32_t> source_lengths;  // [B]
  int64_t source_steps = 0;             // S_src
  int64_t row_capacity = 0;             // R_cap
  int64_t rows = 0;                     // R
  int64_t length = 0;                   // positions decoded so far
};

}  // namespace xlate
