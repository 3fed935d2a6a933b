// The stable prefix of a sentence under beam search (engine/decoding/stable_prefix.h), on a
// hand-written history: the common prefix of the hypotheses that can still win, and which
// live hypotheses the best finished one rules out.
#include <gtest/gtest.h>

#include "engine/decoding/stable_prefix.h"

namespace xlate {
namespace {

// One sentence of beam 2 (columns 0 and 1) after three steps:
//   step 0: live 0 = 10, live 1 = 11
//   step 1: live 0 = 10 12, live 1 = 10 13
//   step 2: live 0 = 10 13 14, live 1 = 10 12 15
const int32_t kTokens[] = {10, 11, 12, 13, 14, 15};
const int32_t kParents[] = {0, 0, 0, 0, 1, 0};
const HypothesisHistory kHistory{kTokens, kParents, /*width=*/2, /*first_column=*/0};

TEST(StablePrefix, TracesAHypothesisBackThroughItsParents) {
  EXPECT_EQ(kHistory.trace(2, 0), (std::vector<int32_t>{10, 13, 14}));
  EXPECT_EQ(kHistory.trace(2, 1), (std::vector<int32_t>{10, 12, 15}));
  EXPECT_EQ(kHistory.trace(0, 1), (std::vector<int32_t>{11}));
  EXPECT_TRUE(kHistory.trace(-1, 0).empty());
}

TEST(StablePrefix, IsWhatEveryLiveHypothesisBeginsWith) {
  StablePrefixQuery query;
  query.steps = 3;
  query.live = {{0, -1.f}, {1, -2.f}};
  EXPECT_EQ(stable_prefix(kHistory, query), (std::vector<int32_t>{10}));
  query.live = {{0, -1.f}};  // one live hypothesis (the other row idles): all of it
  EXPECT_EQ(stable_prefix(kHistory, query), (std::vector<int32_t>{10, 13, 14}));
  query.live.clear();
  EXPECT_TRUE(stable_prefix(kHistory, query).empty());
}

TEST(StablePrefix, LeavesOutLiveHypothesesThatCannotBeatTheBestFinished) {
  StablePrefixQuery query;
  query.steps = 3;
  query.max_length = 10;
  query.best_finished = FinishedHypothesis{-0.5f, /*last_step=*/1, /*last_index=*/1};  // 10 13
  query.live = {{0, -0.3f}, {1, -0.8f}};
  // α = 0: live 1 ends at best at -0.8 < -0.5, so only 10 13 and 10 13 14 can win.
  query.length_penalty = 0.f;
  EXPECT_EQ(stable_prefix(kHistory, query), (std::vector<int32_t>{10, 13}));
  // α = 0.6: lp(10) = 2.5^0.6 ≈ 1.73 lets live 1 reach -0.8 / 1.73 ≈ -0.46 > -0.5.
  query.length_penalty = 0.6f;
  EXPECT_EQ(stable_prefix(kHistory, query), (std::vector<int32_t>{10}));
  // A tie ranks after the hypothesis that finished first: it cannot win.
  query.length_penalty = 0.f;
  query.live = {{1, -0.5f}};
  EXPECT_EQ(stable_prefix(kHistory, query), (std::vector<int32_t>{10, 13}));
}

TEST(StablePrefix, ReadsTheSentencesOwnColumns) {
  // Two sentences of beam 1 side by side: sentence 1's columns start at 1.
  const int32_t tokens[] = {20, 30, 21, 31};
  const int32_t parents[] = {0, 0, 0, 0};
  const HypothesisHistory second{tokens, parents, /*width=*/2, /*first_column=*/1};
  StablePrefixQuery query;
  query.steps = 2;
  query.live = {{0, -1.f}};
  EXPECT_EQ(stable_prefix(second, query), (std::vector<int32_t>{30, 31}));
}

}  // namespace
}  // namespace xlate
