// Length-grouped batches of sentence pairs for training, in a seeded, resumable order.
//
// A batch is a global step's pairs across all ranks (shard.h splits it). Its cost is counted
// with padding, as fairseq does: rows × (longest source + longest decoder sequence) must stay
// within max_tokens, where a source counts its stored tokens (ids + eos) and a target its
// decoder length (ids + 1). The paper's ≈25k + 25k tokens per step is max_tokens ≈ 50,000,
// chosen by the caller.
//
// A pair whose cost alone exceeds max_tokens can never be batched: Create drops it and counts
// it in dropped_pairs() (an error only when no pair fits at all).
//
// Each epoch e:
//   1. the usable pairs are shuffled (Fisher-Yates, mt19937_64 seeded by derive_seed(seed, e));
//   2. they are stably sorted by length: the longer of the two sides first, then the source,
//      then the target (on Multi30k this pads ~10% less than fairseq's (source, target) order,
//      as the length ratio filter keeps the sides close); pairs of equal lengths land in a
//      random order, and so in different batches each epoch;
//   3. the sorted run is cut greedily into batches at the token and sentence limits;
//   4. the order of the batches is shuffled with the same generator.
// The sorted sequence of lengths is the same every epoch, so the cut points and the number of
// batches are too. Without `shuffle` steps 1 and 4 are skipped. The rows of a returned batch
// are ordered by their tokens (source + decoder length), fewest first; shard() relies on it.
//
// position() and seek() make the order resumable: after seek(p), next() returns exactly the
// batches that followed p in an uninterrupted run, on any machine.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/data/token_corpus.h"

namespace xlate::trainer {

struct BatchingOptions {
  int64_t max_tokens = 0;  // padded source + target tokens per global batch; > 0
  int max_sentences = 0;   // pairs per global batch; 0 = no limit
  uint64_t seed = 1;
  bool shuffle = true;
};

// Where the batch stream stands: the next batch next() returns is batch `batch` (in the
// epoch's shuffled order) of epoch `epoch`. Epochs count from 0.
struct BatchPosition {
  int64_t epoch = 0;
  int64_t batch = 0;
  bool operator==(const BatchPosition& other) const {
    return epoch == other.epoch && batch == other.batch;
  }
};

class BatchIterator {
 public:
  // `corpus` must outlive the iterator.
  static absl::StatusOr<BatchIterator> Create(const TokenCorpus& corpus,
                                              const BatchingOptions& options);

  // The pair indices of the next batch, fewest tokens first; wraps to the next epoch.
  std::vector<int64_t> next();
  BatchPosition position() const;
  // Continues from `position` (as returned by position()); batch may equal
  // batches_per_epoch(), meaning the start of the next epoch.
  absl::Status seek(BatchPosition position);

  int64_t epoch() const { return position().epoch; }
  int64_t batches_per_epoch() const { return static_cast<int64_t>(batch_starts_.size()) - 1; }
  // Pairs batched each epoch, and pairs never batched (each alone exceeds max_tokens).
  int64_t pairs_per_epoch() const { return static_cast<int64_t>(usable_.size()); }
  int64_t dropped_pairs() const { return dropped_pairs_; }
  // A hash of what the order depends on (options, corpus size, batch cut points): a resumed
  // run can compare it with the one saved beside its position to catch a changed setup.
  uint64_t fingerprint() const;

 private:
  BatchIterator(const TokenCorpus& corpus, const BatchingOptions& options);
  void choose_usable_pairs();
  // Cuts the length-sorted usable pairs into batches (the same cut points every epoch).
  void find_batch_starts();
  // Orders pairs and batches for `epoch` (steps 1, 2 and 4 above).
  void plan_epoch(int64_t epoch);
  // Stable sort of `pairs` (positions in usable_) by length_keys_.
  void sort_by_length(std::vector<int64_t>* pairs) const;

  // (longer side's cost, source length << 32 | stored target length), compared in order.
  using LengthKey = std::pair<uint64_t, uint64_t>;

  const TokenCorpus* corpus_;
  BatchingOptions options_;
  std::vector<int64_t> usable_;        // [P] corpus indices of batchable pairs, ascending
  std::vector<LengthKey> length_keys_;  // [P]
  int64_t dropped_pairs_ = 0;
  std::vector<int64_t> batch_starts_;  // [B + 1] batch b is sorted positions [b, b+1)
  int64_t planned_epoch_ = -1;
  std::vector<int64_t> sorted_pairs_;  // [P] corpus indices of the epoch, length-sorted
  std::vector<int64_t> batch_order_;   // [B] the epoch's order of batches
  int64_t next_batch_ = 0;             // into batch_order_
};

}  // namespace xlate::trainer
