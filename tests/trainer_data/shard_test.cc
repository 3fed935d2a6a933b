// shard(): every rank's part of a global batch; the parts tile the batch and are balanced.
#include "trainer/data/shard.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "tests/trainer_data/test_support.h"
#include "trainer/data/batch_iterator.h"
#include "trainer/data/training_batch.h"

namespace xlate::trainer {
namespace {

TEST(Shard, DealsRowsInSnakeOrder) {
  const std::vector<int64_t> batch = {10, 11, 12, 13, 14, 15, 16};
  EXPECT_EQ(shard(batch, 0, 3), (std::vector<int64_t>{10, 15, 16}));
  EXPECT_EQ(shard(batch, 1, 3), (std::vector<int64_t>{11, 14}));
  EXPECT_EQ(shard(batch, 2, 3), (std::vector<int64_t>{12, 13}));
  EXPECT_EQ(shard(batch, 0, 1), batch);
  EXPECT_EQ(shard({}, 0, 2), std::vector<int64_t>{});
  EXPECT_EQ(shard({4}, 1, 2), std::vector<int64_t>{});
}

TEST(Shard, RejectsARankOutsideTheWorld) {
  EXPECT_THROW(shard({1, 2}, 2, 2), std::invalid_argument);
  EXPECT_THROW(shard({1, 2}, -1, 2), std::invalid_argument);
  EXPECT_THROW(shard({1, 2}, 0, 0), std::invalid_argument);
}

TEST(Shard, ShardsOfRealBatchesTileTheBatchWithBalancedTokens) {
  absl::StatusOr<TokenCorpus> corpus = TokenCorpus::Open(testing::shared_corpus_dir(), "train");
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  absl::StatusOr<BatchIterator> iterator = BatchIterator::Create(*corpus, {4000, 0, 8, true});
  ASSERT_TRUE(iterator.ok()) << iterator.status();
  for (int64_t step = 0; step < iterator->batches_per_epoch(); ++step) {
    const std::vector<int64_t> batch = iterator->next();
    int64_t longest_row = 0, shortest_row = INT64_MAX;
    for (int64_t pair : batch) {
      const int64_t tokens = count_batch_tokens(*corpus, {pair}).padded_tokens();
      longest_row = std::max(longest_row, tokens);
      shortest_row = std::min(shortest_row, tokens);
    }
    for (const int world : {1, 2, 3, 8}) {
      std::vector<int64_t> all;
      int64_t fewest_rows = INT64_MAX, most_rows = 0, fewest_tokens = INT64_MAX, most_tokens = 0;
      for (int rank = 0; rank < world; ++rank) {
        const std::vector<int64_t> part = shard(batch, rank, world);
        all.insert(all.end(), part.begin(), part.end());
        const BatchTokenCounts counts = count_batch_tokens(*corpus, part);
        const int64_t tokens = counts.source_tokens + counts.target_tokens;
        fewest_rows = std::min(fewest_rows, counts.rows);
        most_rows = std::max(most_rows, counts.rows);
        fewest_tokens = std::min(fewest_tokens, tokens);
        most_tokens = std::max(most_tokens, tokens);
      }
      std::vector<int64_t> sorted_batch = batch;
      std::sort(sorted_batch.begin(), sorted_batch.end());
      std::sort(all.begin(), all.end());
      ASSERT_EQ(all, sorted_batch) << "world " << world;
      ASSERT_LE(most_rows - fewest_rows, 1) << "world " << world;
      // The bound of shard.h: the longest row plus the spread of the batch.
      ASSERT_LE(most_tokens - fewest_tokens, longest_row + (longest_row - shortest_row))
          << "world " << world;
    }
  }
}

}  // namespace
}  // namespace xlate::trainer
