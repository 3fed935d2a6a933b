#include "trainer/data/batch_iterator.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "trainer/data/seeded_shuffle.h"

namespace xlate::trainer {
namespace {

// Tokens a pair occupies in a batch row: its source and its decoder sequence.
int64_t source_cost(const TokenCorpus& corpus, int64_t pair) {
  return corpus.source_length(pair);
}
int64_t target_cost(const TokenCorpus& corpus, int64_t pair) {
  return corpus.target_length(pair) + 1;
}

}  // namespace

BatchIterator::BatchIterator(const TokenCorpus& corpus, const BatchingOptions& options)
    : corpus_(&corpus), options_(options) {}

absl::StatusOr<BatchIterator> BatchIterator::Create(const TokenCorpus& corpus,
                                                    const BatchingOptions& options) {
  if (options.max_tokens <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_tokens ", options.max_tokens, " must be > 0"));
  }
  if (options.max_sentences < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_sentences ", options.max_sentences, " must be >= 0 (0 = no limit)"));
  }
  if (corpus.size() == 0) return absl::FailedPreconditionError("the corpus has no pairs");
  BatchIterator iterator(corpus, options);
  iterator.choose_usable_pairs();
  if (iterator.usable_.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no pair fits max_tokens ", options.max_tokens, " (source + target tokens per batch)"));
  }
  iterator.find_batch_starts();
  iterator.plan_epoch(0);
  return iterator;
}

void BatchIterator::choose_usable_pairs() {
  for (int64_t pair = 0; pair < corpus_->size(); ++pair) {
    const int64_t source = source_cost(*corpus_, pair), target = target_cost(*corpus_, pair);
    if (source + target > options_.max_tokens) {
      ++dropped_pairs_;
      continue;
    }
    usable_.push_back(pair);
    const uint64_t both = static_cast<uint64_t>(source) << 32 |
                          static_cast<uint64_t>(corpus_->target_length(pair));
    length_keys_.push_back(LengthKey{static_cast<uint64_t>(std::max(source, target)), both});
  }
}

void BatchIterator::sort_by_length(std::vector<int64_t>* pairs) const {
  std::stable_sort(pairs->begin(), pairs->end(), [this](int64_t a, int64_t b) {
    return length_keys_[a] < length_keys_[b];
  });
}

void BatchIterator::find_batch_starts() {
  std::vector<int64_t> sorted(usable_.size());
  std::iota(sorted.begin(), sorted.end(), 0);
  sort_by_length(&sorted);
  batch_starts_ = {0};
  int64_t rows = 0, longest_source = 0, longest_target = 0;
  for (size_t k = 0; k < sorted.size(); ++k) {
    const int64_t pair = usable_[sorted[k]];
    const int64_t source = source_cost(*corpus_, pair), target = target_cost(*corpus_, pair);
    if (rows > 0) {
      // Cost of the batch with this pair added, padding included.
      const int64_t padded =
          (rows + 1) * (std::max(longest_source, source) + std::max(longest_target, target));
      const bool over_rows = options_.max_sentences > 0 && rows + 1 > options_.max_sentences;
      if (padded > options_.max_tokens || over_rows) {
        batch_starts_.push_back(static_cast<int64_t>(k));
        rows = 0, longest_source = 0, longest_target = 0;
      }
    }
    ++rows;
    longest_source = std::max(longest_source, source);
    longest_target = std::max(longest_target, target);
  }
  batch_starts_.push_back(static_cast<int64_t>(sorted.size()));
}

uint64_t BatchIterator::fingerprint() const {
  uint64_t hash = derive_seed(options_.seed, static_cast<uint64_t>(options_.max_tokens));
  hash = derive_seed(hash, static_cast<uint64_t>(options_.max_sentences) << 1 | options_.shuffle);
  hash = derive_seed(hash, static_cast<uint64_t>(corpus_->size()));
  for (const int64_t start : batch_starts_) hash = derive_seed(hash, static_cast<uint64_t>(start));
  return hash;
}

void BatchIterator::plan_epoch(int64_t epoch) {
  std::mt19937_64 rng(derive_seed(options_.seed, static_cast<uint64_t>(epoch)));
  std::vector<int64_t> order(usable_.size());  // positions in usable_
  std::iota(order.begin(), order.end(), 0);
  if (options_.shuffle) shuffle_in_place(&order, rng);
  sort_by_length(&order);
  sorted_pairs_.resize(order.size());
  for (size_t k = 0; k < order.size(); ++k) sorted_pairs_[k] = usable_[order[k]];
  batch_order_.resize(static_cast<size_t>(batches_per_epoch()));
  std::iota(batch_order_.begin(), batch_order_.end(), 0);
  if (options_.shuffle) shuffle_in_place(&batch_order_, rng);
  planned_epoch_ = epoch;
  next_batch_ = 0;
}

std::vector<int64_t> BatchIterator::next() {
  if (next_batch_ == batches_per_epoch()) plan_epoch(planned_epoch_ + 1);
  const int64_t batch = batch_order_[static_cast<size_t>(next_batch_++)];
  std::vector<int64_t> rows(sorted_pairs_.begin() + batch_starts_[batch],
                            sorted_pairs_.begin() + batch_starts_[batch + 1]);
  std::stable_sort(rows.begin(), rows.end(), [this](int64_t a, int64_t b) {
    return source_cost(*corpus_, a) + target_cost(*corpus_, a) <
           source_cost(*corpus_, b) + target_cost(*corpus_, b);
  });
  return rows;
}

BatchPosition BatchIterator::position() const {
  if (next_batch_ == batches_per_epoch()) return BatchPosition{planned_epoch_ + 1, 0};
  return BatchPosition{planned_epoch_, next_batch_};
}

absl::Status BatchIterator::seek(BatchPosition position) {
  if (position.epoch < 0 || position.batch < 0 || position.batch > batches_per_epoch()) {
    return absl::OutOfRangeError(absl::StrCat(
        "batch position {epoch ", position.epoch, ", batch ", position.batch,
        "} is outside epochs >= 0 and batches [0, ", batches_per_epoch(),
        "] (was the corpus or the batching options changed since it was saved?)"));
  }
  if (position.batch == batches_per_epoch()) position = BatchPosition{position.epoch + 1, 0};
  if (position.epoch != planned_epoch_) plan_epoch(position.epoch);
  next_batch_ = position.batch;
  return absl::OkStatus();
}

}  // namespace xlate::trainer
