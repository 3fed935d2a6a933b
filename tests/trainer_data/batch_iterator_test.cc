// BatchIterator and the seeded shuffle under it: the token budget with padding, the sentence
// limit, every pair once per epoch, seeds, and exact resumption with seek().
#include "trainer/data/batch_iterator.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tests/trainer_data/test_support.h"
#include "trainer/data/seeded_shuffle.h"
#include "trainer/data/training_batch.h"

namespace xlate::trainer {
namespace {

using Batches = std::vector<std::vector<int64_t>>;

// Golden values from an independent Python implementation of MT19937-64, the SplitMix64
// finaliser, the rejection draw and Fisher-Yates (written from their published definitions).
TEST(SeededShuffle, MatchesTheReferenceOnEveryMachine) {
  std::mt19937_64 standard;  // the C++ standard fixes its 10000th output
  standard.discard(9999);
  EXPECT_EQ(standard(), 9981545732273789042ull);
  EXPECT_EQ(derive_seed(42, 0), 6332618229526065668ull);
  EXPECT_EQ(derive_seed(42, 1), 17532488217563185893ull);

  std::mt19937_64 rng(derive_seed(7, 3));
  std::vector<int64_t> values(10);
  std::iota(values.begin(), values.end(), 0);
  shuffle_in_place(&values, rng);
  EXPECT_EQ(values, (std::vector<int64_t>{1, 2, 0, 4, 6, 9, 5, 7, 8, 3}));

  rng.seed(derive_seed(7, 3));
  const std::vector<uint64_t> bounds = {1, 2, 3, 1000, (1ull << 63) + 1};
  std::vector<uint64_t> draws;
  for (uint64_t bound : bounds) draws.push_back(uniform_below(rng, bound));
  EXPECT_EQ(draws, (std::vector<uint64_t>{0, 0, 0, 504, 5404741250360264856ull}));
}

class BatchIteratorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<TokenCorpus> corpus = TokenCorpus::Open(testing::shared_corpus_dir(), "train");
    ASSERT_TRUE(corpus.ok()) << corpus.status();
    corpus_ = new TokenCorpus(*std::move(corpus));
  }
  static void TearDownTestSuite() {
    delete corpus_;
    corpus_ = nullptr;
  }

  static BatchIterator make(const BatchingOptions& options) {
    absl::StatusOr<BatchIterator> iterator = BatchIterator::Create(*corpus_, options);
    EXPECT_TRUE(iterator.ok()) << iterator.status();
    return *std::move(iterator);
  }
  static Batches take(BatchIterator& iterator, int64_t count) {
    Batches batches;
    for (int64_t i = 0; i < count; ++i) batches.push_back(iterator.next());
    return batches;
  }
  // The pair cost the batcher budgets: source tokens + decoder positions.
  static int64_t cost(int64_t pair) {
    return corpus_->source_length(pair) + corpus_->target_length(pair) + 1;
  }
  // The length batches are grouped by: the longer of source and decoder sequence.
  static int64_t longer_side(int64_t pair) {
    return std::max(corpus_->source_length(pair), corpus_->target_length(pair) + 1);
  }

  static inline TokenCorpus* corpus_ = nullptr;
};

TEST_F(BatchIteratorTest, BatchesRespectTheTokenBudgetWithPaddingAndTheSentenceLimit) {
  for (const auto& [max_tokens, max_sentences] :
       {std::pair{2000, 0}, std::pair{2000, 32}, std::pair{600, 0}, std::pair{25000, 100}}) {
    BatchIterator iterator = make({max_tokens, max_sentences, /*seed=*/3, /*shuffle=*/true});
    int64_t padded = 0, real = 0;
    for (const std::vector<int64_t>& batch : take(iterator, iterator.batches_per_epoch())) {
      const BatchTokenCounts counts = count_batch_tokens(*corpus_, batch);
      ASSERT_LE(counts.padded_tokens(), max_tokens);
      if (max_sentences > 0) {
        ASSERT_LE(counts.rows, max_sentences);
      }
      padded += counts.padded_tokens();
      real += counts.source_tokens + counts.target_tokens;
    }
    // Length grouping keeps padding small and batches close to full.
    EXPECT_GT(static_cast<double>(real) / padded, 0.85) << max_tokens;
    const double mean_fill = static_cast<double>(padded) / iterator.batches_per_epoch();
    if (max_sentences == 0) {
      EXPECT_GT(mean_fill, 0.8 * max_tokens) << max_tokens;
    }
  }
}

TEST_F(BatchIteratorTest, EveryPairOnceEachEpochFewestTokensFirst) {
  BatchIterator iterator = make({1500, 0, 11, true});
  ASSERT_EQ(iterator.dropped_pairs(), 0);
  ASSERT_EQ(iterator.pairs_per_epoch(), corpus_->size());
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    ASSERT_EQ(iterator.epoch(), epoch);
    std::vector<int64_t> seen;
    for (const std::vector<int64_t>& batch : take(iterator, iterator.batches_per_epoch())) {
      ASSERT_FALSE(batch.empty());
      for (size_t row = 1; row < batch.size(); ++row) {
        ASSERT_LE(cost(batch[row - 1]), cost(batch[row]));
      }
      seen.insert(seen.end(), batch.begin(), batch.end());
    }
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> all(static_cast<size_t>(corpus_->size()));
    std::iota(all.begin(), all.end(), 0);
    ASSERT_EQ(seen, all) << "epoch " << epoch;
  }
}

TEST_F(BatchIteratorTest, SameSeedSameBatchesOtherSeedOrEpochOtherOrder) {
  BatchIterator first = make({1500, 0, 5, true}), second = make({1500, 0, 5, true});
  BatchIterator other = make({1500, 0, 6, true});
  const int64_t per_epoch = first.batches_per_epoch();
  const Batches a = take(first, 2 * per_epoch);
  EXPECT_EQ(a, take(second, 2 * per_epoch));
  EXPECT_EQ(other.batches_per_epoch(), per_epoch);  // cut points depend on lengths only
  const Batches b = take(other, per_epoch);
  EXPECT_NE(Batches(a.begin(), a.begin() + per_epoch), b);
  EXPECT_NE(Batches(a.begin(), a.begin() + per_epoch), Batches(a.begin() + per_epoch, a.end()));
  // Equal-length pairs are mixed anew each epoch, so batch contents change, not only order.
  std::vector<std::vector<int64_t>> epoch0(a.begin(), a.begin() + per_epoch);
  std::vector<std::vector<int64_t>> epoch1(a.begin() + per_epoch, a.end());
  std::sort(epoch0.begin(), epoch0.end());
  std::sort(epoch1.begin(), epoch1.end());
  EXPECT_NE(epoch0, epoch1);
}

TEST_F(BatchIteratorTest, WithoutShuffleBatchesComeShortestFirstEveryEpoch) {
  BatchIterator iterator = make({1500, 0, 5, false});
  const int64_t per_epoch = iterator.batches_per_epoch();
  const Batches epoch0 = take(iterator, per_epoch), epoch1 = take(iterator, per_epoch);
  EXPECT_EQ(epoch0, epoch1);
  int64_t previous_longest = 0;
  for (const std::vector<int64_t>& batch : epoch0) {
    int64_t shortest = INT64_MAX, longest = 0;
    for (int64_t pair : batch) {
      shortest = std::min(shortest, longer_side(pair));
      longest = std::max(longest, longer_side(pair));
    }
    ASSERT_LE(previous_longest, shortest);
    previous_longest = longest;
  }
}

TEST_F(BatchIteratorTest, SeekReproducesTheContinuationAcrossEpochs) {
  const BatchingOptions options{1200, 40, 99, true};
  BatchIterator reference = make(options);
  const int64_t per_epoch = reference.batches_per_epoch();
  const int64_t total = 2 * per_epoch + 5;
  std::vector<BatchPosition> positions;
  Batches batches;
  for (int64_t i = 0; i < total; ++i) {
    positions.push_back(reference.position());
    batches.push_back(reference.next());
  }
  EXPECT_EQ(positions[per_epoch], (BatchPosition{1, 0}));
  for (const int64_t start : {int64_t{0}, int64_t{7}, per_epoch - 2, per_epoch, per_epoch + 3,
                              2 * per_epoch - 1}) {
    BatchIterator resumed = make(options);
    take(resumed, 3);  // some other state before the seek
    ASSERT_TRUE(resumed.seek(positions[start]).ok());
    ASSERT_EQ(resumed.position(), positions[start]);
    for (int64_t i = start; i < total; ++i) {
      ASSERT_EQ(resumed.next(), batches[i]) << "resumed at " << start << ", batch " << i;
    }
  }
  // The end of an epoch, written either way, is the start of the next.
  BatchIterator resumed = make(options);
  ASSERT_TRUE(resumed.seek({0, per_epoch}).ok());
  EXPECT_EQ(resumed.position(), (BatchPosition{1, 0}));
  EXPECT_EQ(resumed.next(), batches[per_epoch]);
  EXPECT_EQ(resumed.fingerprint(), reference.fingerprint());
  EXPECT_NE(make({1200, 40, 98, true}).fingerprint(), reference.fingerprint());
}

TEST_F(BatchIteratorTest, SeekRejectsPositionsOutsideThePlan) {
  BatchIterator iterator = make({1500, 0, 1, true});
  for (const BatchPosition position :
       {BatchPosition{-1, 0}, BatchPosition{0, -1}, BatchPosition{0, iterator.batches_per_epoch() + 1}}) {
    const absl::Status status = iterator.seek(position);
    EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange) << status;
  }
}

TEST_F(BatchIteratorTest, PairsLongerThanTheBudgetAreDroppedAndCounted) {
  const int64_t max_tokens = 30;
  int64_t expected_dropped = 0;
  for (int64_t pair = 0; pair < corpus_->size(); ++pair) expected_dropped += cost(pair) > max_tokens;
  ASSERT_GT(expected_dropped, 0);
  BatchIterator iterator = make({max_tokens, 0, 1, true});
  EXPECT_EQ(iterator.dropped_pairs(), expected_dropped);
  EXPECT_EQ(iterator.pairs_per_epoch() + expected_dropped, corpus_->size());
  int64_t batched = 0;
  for (const std::vector<int64_t>& batch : take(iterator, iterator.batches_per_epoch())) {
    ASSERT_LE(count_batch_tokens(*corpus_, batch).padded_tokens(), max_tokens);
    batched += static_cast<int64_t>(batch.size());
  }
  EXPECT_EQ(batched, iterator.pairs_per_epoch());
}

TEST_F(BatchIteratorTest, RejectsBadOptionsAndAnImpossibleBudget) {
  EXPECT_EQ(BatchIterator::Create(*corpus_, {0, 0, 1, true}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BatchIterator::Create(*corpus_, {100, -1, 1, true}).status().code(),
            absl::StatusCode::kInvalidArgument);
  const absl::Status impossible = BatchIterator::Create(*corpus_, {3, 0, 1, true}).status();
  EXPECT_EQ(impossible.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(impossible.message().find("max_tokens 3"), std::string::npos) << impossible;
}

}  // namespace
}  // namespace xlate::trainer
