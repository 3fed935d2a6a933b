// Incremental-decoding state: one typed cache per decoder layer.
// Legend: R live rows (sentences x beams), R_cap the row capacity, B source sentences,
// S_max the decoding capacity in positions, S_src the padded source length, C = d_model.
#pragma once

#include <cstdint>
#include <vector>

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

// Where a row of a decoding state comes from when the rows change (TransformerModel::place_rows).
struct RowPlacement {
  int32_t source_row = -1;  // the live row it continues, or -1: a sentence's first row
  int32_t sentence = 0;     // its source sentence (whose cross-attention keys it reads)
  int32_t slot = 0;         // the physical cache slot (< R_cap) its new positions go to
  int32_t position = 0;     // the position it decodes next (0 for a first row)
};

struct DecoderState {
  std::vector<DecoderLayerCache> layers;
  // On the model's device, so that a GPU step needs no upload. Live row r < R decodes position
  // row_positions[r] + length into physical slot row_slots[r]; row_table [R_cap, S_max] int32,
  // entry [r, s] = s·R_cap + the slot that holds position s of row r, i.e. the row of the
  // time-major cache viewed as [S_max·R_cap, C]. Beam reordering gathers this table's rows
  // (shared by every layer), not the cached keys and values. cross_rows [R, S_src] and
  // cross_lengths [R]: the source keys of each row's sentence.
  Tensor row_table;
  Tensor row_slots, row_positions;  // int32 [R]
  Tensor cross_rows, cross_lengths;
  std::vector<int32_t> row_sentence;    // [R], host: the source sentence of each live row
  std::vector<int32_t> row_position;    // [R], host: row_positions
  std::vector<int32_t> source_lengths;  // [B]
  int64_t source_steps = 0;             // S_src
  int64_t row_capacity = 0;             // R_cap
  int64_t length = 0;                   // positions each row decoded since the rows were placed
};

}  // namespace xlate
