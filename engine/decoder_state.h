// The state of an incremental decode: the bookkeeping of the live rows (sentences x beams) and
// of the KV-cache blocks (engine/kv_cache_pool.h) they read and write. The state owns that
// bookkeeping: the device tensors a decoding step reads and their host copies are changed
// together, here only, by placing rows (sentences joining or leaving), taking blocks as rows
// reach new positions and selecting rows (beam reordering).
// TransformerModel (transformer.h) creates states and does a step's maths over them.
//
// Paging: each cache slot (a sentence slot's beam b) holds a block table, the blocks of its
// positions in order, taken as its rows reach them; a sentence slot holds the blocks of its
// source keys. A row reads through a per-position row table (row_table_) that beam reordering
// gathers: a row continuing another reads that row's earlier positions where they are, in
// whichever slot of the sentence wrote them, so shared prefixes are shared and nothing is
// copied. Every row writes only its own slot's positions, each once (a sentence's rows advance
// together), so no block is written while another row reads it. A sentence slot's blocks go
// back to the pool when its rows leave (place_rows without them) or it is released.
//
// Legend: R live rows, R_cap = sentence slots x rows per sentence, S_max positions, S_src source
// positions per sentence slot, B = KvCachePool::kBlockPositions.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/kv_cache_pool.h"
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
  // Rows of `shape` whose keys and values live in `pool` (which other states of the same thread
  // may share); no live rows, no blocks.
  DecoderState(const Shape& shape, std::shared_ptr<KvCachePool> pool);
  // Gives the blocks back.
  ~DecoderState();
  DecoderState(DecoderState&& other) = default;
  DecoderState& operator=(DecoderState&&) = delete;

  // Replaces the live rows: new row i is rows[i], whose new positions go to cache slot
  // sentence·rows_per_sentence + beam. Rows that continue a live row come first. Two live rows
  // never share a slot, and a slot's positions from the current one on may be overwritten only
  // if no live row reads them. The sentence slots that had live rows and have none now give
  // their blocks back.
  void place_rows(const std::vector<RowPlacement>& rows);
  // The sentences in these slots will not decode (or no longer): their blocks go back to the
  // pool. For slots given sources that are not placed after all.
  void release_sentences(const std::vector<int32_t>& sentence_slots);
  // Beam reordering with the rows on the device: source_rows int32 [R] (the current R rows),
  // each naming a row of the same sentence; the rows' sentences, slots and positions stay.
  void select_rows_on_device(const Tensor& source_rows);
  // Takes the blocks of the source keys of sentence slots (lengths[n] <= S_src positions for
  // sentence_slots[n], the positions their rows' cross-attention reads), giving back those the
  // slots held; returns where their keys and values go: the pool rows of position s of slot n
  // at [offset_n + s], offset_n the sum of the lengths before n. Throws std::bad_alloc when the
  // pool has no room (the slots then hold no source blocks).
  std::vector<int32_t> take_source_rows(const std::vector<int32_t>& sentence_slots,
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
  // then on those positions count as decoded, and the tokens as the rows' histories. Takes the
  // blocks the rows reach (std::bad_alloc when the pool has no room; the rows then have not
  // advanced).
  StepTables advance(const Tensor& tokens);

  // The keys and values (KvCachePool::layer) the step tables' rows address.
  KvCachePool& pool() { return *pool_; }
  const Shape& shape() const { return shape_; }
  int64_t rows() const { return static_cast<int64_t>(host_row_sentences_.size()); }

 private:
  Tensor on_device(const Tensor& host) const;
  // place_rows with each row's cache slot given.
  void place(const std::vector<RowPlacement>& rows, const std::vector<int32_t>& slots);
  // The first `rows` rows of a fresh row table gathered from the current one by source_rows.
  void gather_table_rows(const Tensor& source_rows, int64_t rows);

  // Gives back the blocks of sentence slot `sentence` (its cache slots' and its source's).
  void release(int32_t sentence);
  // Takes blocks for each live row's cache slot up to `positions` past its next position, and
  // puts the block table where decode_positions reads it.
  void take_blocks(int64_t positions);

  Shape shape_;
  Device device_;
  std::shared_ptr<KvCachePool> pool_;
  int64_t blocks_per_slot_;
  // The block table: [R_cap, blocks_per_slot_], row c the blocks of cache slot c's positions in
  // order (the first slot_block_counts_[c] valid); on the host, and where the state computes
  // (the same tensor on the CPU).
  Tensor host_slot_blocks_, slot_blocks_;
  bool slot_blocks_stale_ = false;  // the device's table lacks blocks taken since its upload
  std::vector<int32_t> slot_block_counts_;  // [R_cap]
  std::vector<std::vector<int32_t>> source_blocks_;  // [sentence slots]: the source's blocks
  std::vector<bool> sentence_live_;  // [sentence slots]: has rows since the last place_rows
  std::vector<int32_t> source_lengths_;  // [sentence slots], host
  std::vector<std::vector<int32_t>> forced_tokens_;  // [sentence slots], host
  std::vector<RepeatGuards> repeat_guards_;           // [sentence slots], host
  Tensor self_lengths_;  // int32 [R]: the positions each row has decoded, after the last call
  // On the device, so that a GPU step needs no upload. row_table [R_cap, S_max]: entry [r, s] =
  // the pool row that holds position s of row r (in the block of the slot that decoded it).
  // Beam reordering gathers this table's rows (shared by every layer), not the cached keys and
  // values. The tokens fed (KvCachePool::fed_tokens, the repetition guards' histories) are read
  // through it too.
  Tensor row_table_;
  Tensor row_slots_, row_positions_;   // int32 [R]: each live row's cache slot and first position
  Tensor cross_rows_, cross_lengths_;  // int32 [R, S_src], [R]: its sentence's source keys
  // Host copies, written with the device tensors above: each live row's sentence slot, cache
  // slot and row_positions_.
  std::vector<int32_t> host_row_sentences_, host_row_slots_, host_row_positions_;
  int64_t length_ = 0;  // positions each row decoded since the rows were placed
};

}  // namespace xlate
