// The state of an incremental decode: the per-layer KV caches and the bookkeeping of the live
// rows (sentences x beams) that read and write them. The state owns that bookkeeping: the
// device tensors a decoding step reads and their host copies are changed together, here only,
// by placing rows (sentences joining or leaving) and selecting rows (beam reordering).
// TransformerModel (transformer.h) creates states and does a step's maths over them.
//
// Legend as in kv_cache.h: R live rows, R_cap = sentence slots x rows per sentence, S_max
// positions, S_src source positions per sentence slot.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/kv_cache.h"
#include "engine/tensor.h"

namespace xlate {

// Where a row of a decoding state comes from when the rows change (DecoderState::place_rows).
struct RowPlacement {
  int32_t source_row = -1;  // the live row it continues, or -1: a sentence's first row
  int32_t sentence = 0;     // its sentence slot (whose source keys it reads)
  int32_t beam = 0;         // its index among its sentence's rows, < rows_per_sentence
  int32_t position = 0;     // the position it decodes next (0 for a first row)
};

class DecoderState {
 public:
  struct Shape {
    int64_t sentences = 1;          // sentence slots
    int64_t rows_per_sentence = 1;  // cache slots of each sentence slot (its widest beam)
    int64_t positions = 1;          // S_max
    int64_t source_steps = 1;       // S_src
  };
  // Caches of `layers` (each self_key_values [S_max, R_cap, width], cross_key_values as given)
  // on `device`; no live rows.
  DecoderState(const Shape& shape, std::vector<DecoderLayerCache> layers, Device device);

  // Replaces the live rows: new row i is rows[i], whose new positions go to cache slot
  // sentence·rows_per_sentence + beam. Rows that continue a live row come first. Two live rows
  // never share a slot, and a slot's positions from the current one on may be overwritten only
  // if no live row reads them.
  void place_rows(const std::vector<RowPlacement>& rows);
  // Beam reordering with the rows on the device: source_rows int32 [R] (the current R rows),
  // each naming a row of the same sentence; the rows' sentences, slots and positions stay.
  void select_rows_on_device(const Tensor& source_rows);
  // The source lengths of sentence slots (the positions their rows' cross-attention reads).
  void set_source_lengths(const std::vector<int32_t>& sentence_slots,
                          const std::vector<int32_t>& lengths);

  // Tokens forced at the first output positions of the sentences in `sentence_slots` (an
  // M2M100/NLLB model's target-language token, which transformers forces with
  // forced_bos_token_id): output position p < forced.size() of their rows is forced[p].
  void set_forced_tokens(const std::vector<int32_t>& sentence_slots,
                         const std::vector<int32_t>& forced);
  struct ForcedToken {
    int32_t row;
    int32_t token;
  };
  // The live rows whose next step (one position) predicts a forced output position.
  std::vector<ForcedToken> forced_next_step() const;

  // The repetition guards of the sentences in `sentence_slots` (rules/repeat_guards.h):
  // penalty 1 and n-gram size 0 are none.
  struct RepeatGuards {
    float repetition_penalty = 1.f;
    int32_t no_repeat_ngram_size = 0;
    bool any() const { return repetition_penalty != 1.f || no_repeat_ngram_size > 0; }
  };
  void set_repeat_guards(const std::vector<int32_t>& sentence_slots, const RepeatGuards& guards);
  // Applies the live rows' guards to the logits [R, V] of the step just decoded (one position
  // per row), over the tokens each row was fed so far; nothing when no live row has guards.
  void penalize_repeats(Tensor& logits) const;

  // The positions and key tables of a decoding call that appends T positions to every live row.
  struct StepTables {
    // Row r decodes positions row_positions[r] + length .. + T - 1 (int32 [R]).
    Tensor row_positions;
    int64_t length = 0;
    Tensor cache_rows;                 // int32 [R·T]: where the new keys/values go
    Tensor self_rows, self_lengths;    // int32 [R, S_max] (the row table's live rows), [R]
    Tensor cross_rows, cross_lengths;  // int32 [R, S_src], [R]
  };
  // The tables of the next call, which feeds tokens int32 [R, T] (on the state's device); from
  // then on those positions count as decoded, and the tokens as the rows' histories.
  StepTables advance(const Tensor& tokens);

  std::vector<DecoderLayerCache>& layers() { return layers_; }
  const Shape& shape() const { return shape_; }
  int64_t rows() const { return static_cast<int64_t>(host_row_sentences_.size()); }

 private:
  Tensor on_device(const Tensor& host) const;
  // place_rows with each row's cache slot given.
  void place(const std::vector<RowPlacement>& rows, const std::vector<int32_t>& slots);
  // The first `rows` rows of a fresh row table gathered from the current one by source_rows.
  void gather_table_rows(const Tensor& source_rows, int64_t rows);

  Shape shape_;
  Device device_;
  std::vector<DecoderLayerCache> layers_;
  std::vector<int32_t> source_lengths_;  // [sentence slots], host
  std::vector<std::vector<int32_t>> forced_tokens_;  // [sentence slots], host
  std::vector<RepeatGuards> repeat_guards_;           // [sentence slots], host
  // The token each row was fed at each position, time-major like the KV caches
  // ([S_max·R_cap], written through the same cache rows and read through row_table_): the
  // histories the repetition guards look at.
  Tensor fed_tokens_;
  Tensor self_lengths_;  // int32 [R]: the positions each row has decoded, after the last call
  // On the device, so that a GPU step needs no upload. row_table [R_cap, S_max]: entry [r, s] =
  // s·R_cap + the slot that holds position s of row r, i.e. the row of the time-major cache
  // viewed as [S_max·R_cap, width]. Beam reordering gathers this table's rows (shared by every
  // layer), not the cached keys and values.
  Tensor row_table_;
  Tensor row_slots_, row_positions_;   // int32 [R]: each live row's cache slot and first position
  Tensor cross_rows_, cross_lengths_;  // int32 [R, S_src], [R]: its sentence's source keys
  // Host copies, written with the device tensors above: each live row's sentence slot and
  // row_positions_.
  std::vector<int32_t> host_row_sentences_, host_row_positions_;
  int64_t length_ = 0;  // positions each row decoded since the rows were placed
};

}  // namespace xlate
