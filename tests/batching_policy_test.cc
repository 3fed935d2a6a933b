// The dynamic-batching policy on a fake clock: every time is a fixed absl::Time, so each case
// is exact.
#include <gtest/gtest.h>

#include "server/batching_policy.h"

namespace xlate::server {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1000000);

BatchingLimits limits(int64_t tokens, int sentences, absl::Duration delay) {
  BatchingLimits result;
  result.max_batch_tokens = tokens;
  result.max_batch_sentences = sentences;
  result.max_queue_delay = delay;
  return result;
}

PendingSentence sentence(int64_t tokens, absl::Duration arrived_after,
                         absl::Time deadline = absl::InfiniteFuture()) {
  return {tokens, kStart + arrived_after, deadline};
}

TEST(BatchingPolicy, EmptyQueueWaitsForever) {
  const BatchDecision decision = decide_batch({}, kStart, limits(100, 8, absl::Milliseconds(5)));
  EXPECT_TRUE(decision.batch.empty());
  EXPECT_EQ(decision.wait, absl::InfiniteDuration());
}

TEST(BatchingPolicy, WaitsUntilTheOldestSentenceHasWaitedMaxQueueDelay) {
  const std::deque<PendingSentence> queue = {sentence(10, absl::ZeroDuration()),
                                             sentence(10, absl::Milliseconds(3))};
  const BatchingLimits policy = limits(1000, 8, absl::Milliseconds(5));
  BatchDecision decision = decide_batch(queue, kStart + absl::Milliseconds(4), policy);
  EXPECT_TRUE(decision.batch.empty());
  EXPECT_EQ(decision.wait, absl::Milliseconds(1));
  decision = decide_batch(queue, kStart + absl::Milliseconds(5), policy);
  EXPECT_EQ(decision.batch, (std::vector<size_t>{0, 1}));
}

TEST(BatchingPolicy, FullBatchByCountGoesAtOnce) {
  std::deque<PendingSentence> queue;
  for (int i = 0; i < 5; ++i) queue.push_back(sentence(10, absl::ZeroDuration()));
  const BatchDecision decision =
      decide_batch(queue, kStart, limits(1000, 4, absl::Seconds(10)));
  EXPECT_EQ(decision.batch, (std::vector<size_t>{0, 1, 2, 3}));
}

TEST(BatchingPolicy, ExactlyFullBatchGoesAtOnce) {
  std::deque<PendingSentence> queue = {sentence(10, absl::ZeroDuration()),
                                       sentence(10, absl::ZeroDuration())};
  EXPECT_EQ(decide_batch(queue, kStart, limits(1000, 2, absl::Seconds(10))).batch.size(), 2u);
  EXPECT_EQ(decide_batch(queue, kStart, limits(20, 8, absl::Seconds(10))).batch.size(), 2u);
}

TEST(BatchingPolicy, TokenBudgetCountsPaddedTokens) {
  // 5 + 5 fit a budget of 40 (padded 10); with the 30-token sentence the padded size would be
  // 3 x 30 = 90, so the batch is full without it (and goes at once).
  const std::deque<PendingSentence> queue = {sentence(5, absl::ZeroDuration()),
                                             sentence(5, absl::ZeroDuration()),
                                             sentence(30, absl::ZeroDuration())};
  const BatchDecision decision = decide_batch(queue, kStart, limits(40, 8, absl::Seconds(10)));
  EXPECT_EQ(decision.batch, (std::vector<size_t>{0, 1}));
}

TEST(BatchingPolicy, OversizedSentenceFormsABatchOfItsOwn) {
  const std::deque<PendingSentence> queue = {sentence(500, absl::ZeroDuration()),
                                             sentence(5, absl::ZeroDuration())};
  const BatchDecision decision = decide_batch(queue, kStart, limits(100, 8, absl::Seconds(10)));
  EXPECT_EQ(decision.batch, (std::vector<size_t>{0}));
}

TEST(BatchingPolicy, ExpiredSentencesAreDroppedAndDeadlinesBoundTheWait) {
  const std::deque<PendingSentence> queue = {
      sentence(5, absl::ZeroDuration(), kStart + absl::Milliseconds(2)),
      sentence(5, absl::Milliseconds(1), kStart + absl::Milliseconds(9)),
      sentence(5, absl::Milliseconds(1), kStart + absl::Milliseconds(4))};
  const BatchingLimits policy = limits(1000, 8, absl::Milliseconds(5));
  const BatchDecision decision = decide_batch(queue, kStart + absl::Milliseconds(3), policy);
  EXPECT_EQ(decision.expired, (std::vector<size_t>{0}));
  EXPECT_TRUE(decision.batch.empty());
  // The oldest live sentence arrived at 1 ms (dispatch at 6 ms) but one expires at 4 ms.
  EXPECT_EQ(decision.wait, absl::Milliseconds(1));
}

TEST(BatchingPolicy, OldestGoesFirstWithTheSentencesClosestInLength) {
  // Room for 3: the oldest (20 tokens) and the two closest to it in length, 18 and 25, not the
  // earlier-arrived 3 and 60.
  const std::deque<PendingSentence> queue = {
      sentence(20, absl::ZeroDuration()), sentence(3, absl::Milliseconds(1)),
      sentence(60, absl::Milliseconds(1)), sentence(25, absl::Milliseconds(2)),
      sentence(18, absl::Milliseconds(3))};
  const BatchDecision decision =
      decide_batch(queue, kStart + absl::Milliseconds(10), limits(1000, 3, absl::Milliseconds(5)));
  EXPECT_EQ(decision.batch, (std::vector<size_t>{0, 3, 4}));
}

TEST(BatchingPolicy, BatchIndicesAscend) {
  const std::deque<PendingSentence> queue = {sentence(9, absl::ZeroDuration()),
                                             sentence(3, absl::Milliseconds(1)),
                                             sentence(8, absl::Milliseconds(2))};
  const BatchDecision decision =
      decide_batch(queue, kStart + absl::Milliseconds(10), limits(1000, 8, absl::Milliseconds(5)));
  EXPECT_EQ(decision.batch, (std::vector<size_t>{0, 1, 2}));
}

// A batch grows from the first sentence in fair order, not the oldest: a light client's
// sentence, queued behind a flood, anchors the next batch (of one sentence, here).
TEST(BatchingPolicy, TheFirstInFairOrderAnchorsTheBatch) {
  std::deque<PendingSentence> queue;
  for (int i = 0; i < 4; ++i) {
    queue.push_back(sentence(10, absl::Milliseconds(i)));
    queue.back().fair_start = 110.0 + 10 * i;  // a flooding client's slices, after now (100)
  }
  queue.push_back(sentence(50, absl::Milliseconds(9)));
  queue.back().fair_start = 100.0;  // another client's first sentence, which starts now
  // Budget 60: the 50-token sentence cannot take a 10-token one along (2 x 50 padded).
  BatchDecision decision =
      decide_batch(queue, kStart + absl::Milliseconds(20), limits(60, 8, absl::Milliseconds(5)));
  EXPECT_EQ(decision.batch, (std::vector<size_t>{4}));
  // Equal places keep arrival order.
  queue.back().fair_start = 110.0;
  decision =
      decide_batch(queue, kStart + absl::Milliseconds(20), limits(60, 8, absl::Milliseconds(5)));
  EXPECT_EQ(decision.batch.front(), 0u);
}

}  // namespace
}  // namespace xlate::server
