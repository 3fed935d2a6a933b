// The beam search (DeviceBeamSearch on the CPU): exhaustive optimality against brute-force
// enumeration on a tiny model, beam 1 == greedy decoding by hand, length limits and early
// stopping on scripted decoders.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "engine/decoding/device_beam_search.h"
#include "engine/model_directory.h"
#include "engine/transformer.h"
#include "tests/brute_force_search.h"
#include "tests/random_tensor.h"
#include "tests/search_to_end.h"

namespace xlate {
namespace {

constexpr int kStart = 2, kEnd = 3;

// A tiny model with a 6-token vocabulary and random logit biases, so that the end token has
// a real chance at every step.
std::shared_ptr<TransformerModel> tiny_model(uint64_t seed) { return tiny_random_model(6, seed); }

using testing::Encoded;
using testing::encode;
using testing::enumerate_all;
using testing::gnmt_length_penalty;

class TinyModelSearch : public ::testing::TestWithParam<float> {};

TEST_P(TinyModelSearch, ExhaustiveBeamFindsTheBruteForceBest) {
  const float alpha = GetParam();
  for (uint64_t seed : {11u, 12u, 13u}) {
    auto model = tiny_model(seed);
    const Encoded encoded = encode(*model, {4, 5, 4, kEnd});
    const int max_length = 4;
    const std::vector<Hypothesis> truth = enumerate_all(*model, encoded, max_length, alpha);
    SearchOptions options;
    options.beam_size = 300;  // more than the 5^3 live prefixes: nothing is pruned
    options.length_penalty = alpha;
    options.n_best = 3;
    const auto found = testing::search_sources(*model, {{4, 5, 4, kEnd}}, {max_length}, options);
    ASSERT_EQ(found[0].size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(found[0][k].tokens, truth[k].tokens) << "seed " << seed << " rank " << k;
      EXPECT_NEAR(found[0][k].score, truth[k].score, 1e-4);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(LengthPenalties, TinyModelSearch, ::testing::Values(0.f, 0.6f, 1.5f));

// Greedy decoding written out: at each step the most probable token of a teacher-forced pass
// over the prefix, until the end token or max_length tokens.
Hypothesis greedy_by_hand(const TransformerModel& model, const testing::Encoded& encoded,
                          int max_length) {
  Hypothesis greedy;
  std::vector<int32_t> input = {kStart};
  for (int length = 1; length <= max_length; ++length) {
    const std::vector<double> next = testing::next_log_probs(model, encoded, input);
    const auto best = int32_t(std::max_element(next.begin(), next.end()) - next.begin());
    greedy.log_prob += float(next[best]);
    if (best == kEnd) break;
    greedy.tokens.push_back(best);
    input.push_back(best);
  }
  return greedy;
}

TEST(Search, BeamOfOneIsGreedy) {
  for (uint64_t seed : {21u, 22u, 23u, 24u}) {
    auto model = tiny_model(seed);
    const std::vector<int32_t> source = {5, 4, kEnd};
    SearchOptions options;
    options.beam_size = 1;
    const auto beam = testing::search_sources(*model, {source}, {12}, options);
    const Hypothesis greedy = greedy_by_hand(*model, testing::encode(*model, source), 12);
    EXPECT_EQ(beam[0][0].tokens, greedy.tokens) << "seed " << seed;
    EXPECT_NEAR(beam[0][0].log_prob, greedy.log_prob, 1e-4);
  }
}

// A decoder whose next-token distribution is a fixed function of (step, token); counts its
// steps and checks that the search keeps rows and tokens consistent.
class ScriptedDecoder : public DeviceIncrementalDecoder {
 public:
  ScriptedDecoder(int vocabulary, std::function<float(int step, int token)> log_prob)
      : vocabulary_(vocabulary), log_prob_(std::move(log_prob)) {}
  Device device() const override { return Device::kCPU; }
  TopK step_on_device(const Tensor& tokens, const Tensor& row_scores, int k,
                      const Tensor& wanted) override {
    EXPECT_FALSE(wanted.defined());
    EXPECT_EQ(tokens.numel(), rows_);
    EXPECT_EQ(row_scores.numel(), rows_);
    k = std::min(k, vocabulary_);
    TopK top{Tensor::empty({rows_, k}, DType::kFloat32), Tensor::empty({rows_, k}, DType::kInt32)};
    std::vector<int32_t> ids(static_cast<size_t>(vocabulary_));
    for (int64_t r = 0; r < rows_; ++r) {
      std::iota(ids.begin(), ids.end(), 0);
      std::stable_sort(ids.begin(), ids.end(),
                       [&](int32_t a, int32_t b) { return log_prob_(steps_, a) > log_prob_(steps_, b); });
      for (int j = 0; j < k; ++j) {
        top.values.data<float>()[r * k + j] =
            row_scores.data<float>()[r] + log_prob_(steps_, ids[j]);
        top.indices.data<int32_t>()[r * k + j] = ids[j];
      }
    }
    ++steps_;
    return top;
  }
  void select_rows_on_device(const Tensor& rows) override {
    EXPECT_EQ(rows.numel(), rows_);
    for (int64_t r = 0; r < rows.numel(); ++r) EXPECT_LT(rows.data<int32_t>()[r], rows_);
  }
  void place_rows(const std::vector<RowPlacement>& rows) override {
    for (const RowPlacement& row : rows) EXPECT_LT(row.source_row, rows_);
    rows_ = int64_t(rows.size());
  }
  int steps() const { return steps_; }

 private:
  int vocabulary_;
  std::function<float(int, int)> log_prob_;
  int64_t rows_ = 0;
  int steps_ = 0;
};

// A whole search of one sentence over a scripted decoder.
std::vector<Hypothesis> search_script(ScriptedDecoder& decoder, int max_length,
                                      const SearchOptions& options) {
  return testing::search_to_end(decoder, {max_length}, options)[0];
}

TEST(Search, OutputNeverExceedsMaxLength) {
  // The end token is never likely: every hypothesis runs to the limit.
  auto never_end = [](int, int token) { return token == kEnd ? -50.f : std::log(0.2f); };
  for (int max_length : {1, 3, 7}) {
    for (int beam : {4, 1}) {
      ScriptedDecoder decoder(6, never_end);
      SearchOptions options;
      options.beam_size = beam;
      const auto result = search_script(decoder, max_length, options);
      ASSERT_FALSE(result.empty());
      EXPECT_EQ(int(result[0].tokens.size()), max_length);
      EXPECT_EQ(decoder.steps(), max_length);
    }
  }
}

TEST(Search, StopsEarlyWhenNoLiveHypothesisCanWin) {
  // Step 0: the end token has probability 0.9; everything else is very unlikely at every step,
  // so after one step no continuation can beat "end now" even with the best length penalty.
  auto script = [](int step, int token) {
    if (step == 0) return token == kEnd ? std::log(0.9f) : std::log(0.02f);
    return token == kEnd ? std::log(0.5f) : std::log(0.1f);
  };
  ScriptedDecoder decoder(6, script);
  SearchOptions options;
  const auto result = search_script(decoder, 40, options);
  EXPECT_TRUE(result[0].tokens.empty());
  EXPECT_EQ(decoder.steps(), 1) << "the search should stop after the first step";
}

TEST(Search, KeepsSearchingWhileALiveHypothesisCanStillWin) {
  // Ending now is possible but weak, and continuations are nearly free: the search must not
  // stop after the first finished hypothesis.
  auto script = [](int step, int token) {
    if (token == kEnd) return step == 3 ? -0.01f : -3.f;
    return token == 4 ? -0.01f : -8.f;
  };
  ScriptedDecoder decoder(6, script);
  SearchOptions options;
  const auto result = search_script(decoder, 10, options);
  EXPECT_EQ(result[0].tokens, (std::vector<int32_t>{4, 4, 4}));
  EXPECT_GT(decoder.steps(), 1);
}

TEST(Search, KeepsSearchingWhileALongerHypothesisCanWinByItsLengthPenalty) {
  // Step 0: ending now scores log 0.5 = -0.693 (lp(1) = 1); token 4 is a little less likely
  // (-0.72), but ending after it is nearly certain, and lp(2) = (7/6)^0.6 = 1.097 makes
  // "4, end" score -0.721 / 1.097 = -0.657: the best. Only a bound at the longest length (the
  // best a live hypothesis could score) sees that; one at its current length stops at step 0.
  auto script = [](int step, int token) {
    if (step == 0) return token == kEnd ? std::log(0.5f) : token == 4 ? -0.72f : -8.f;
    return token == kEnd ? -0.001f : -8.f;
  };
  ScriptedDecoder decoder(6, script);
  SearchOptions options;  // beam 4, α 0.6
  const auto result = search_script(decoder, 40, options);
  EXPECT_EQ(result[0].tokens, (std::vector<int32_t>{4}));
}

TEST(Search, ABeamOfOneStepsOverAForbiddenEnd) {
  // The end token is the most likely at every step but forbidden before 3 tokens: a beam of 1
  // needs candidates beyond its best one (2·B + 1 per row) to continue at all.
  auto always_end = [](int, int token) { return token == kEnd ? std::log(0.9f) : std::log(0.02f); };
  ScriptedDecoder decoder(6, always_end);
  SearchOptions options;
  options.beam_size = 1;
  options.min_length = 3;
  const auto result = search_script(decoder, 10, options);
  ASSERT_FALSE(result.empty());
  EXPECT_EQ(result[0].tokens.size(), 3u);
}

TEST(Search, MinLengthForbidsEarlyEnd) {
  auto always_end = [](int, int token) { return token == kEnd ? std::log(0.9f) : std::log(0.02f); };
  for (int beam : {4, 1}) {
    ScriptedDecoder decoder(6, always_end);
    SearchOptions options;
    options.beam_size = beam;
    options.min_length = 3;
    const auto result = search_script(decoder, 10, options);
    EXPECT_EQ(result[0].tokens.size(), 3u);
  }
}

TEST(Search, NBestListIsSortedAndSized) {
  auto model = tiny_model(31);
  SearchOptions options;
  options.beam_size = 4;
  options.n_best = 4;
  const auto result = testing::search_sources(*model, {{4, 4, 5, kEnd}}, {10}, options);
  ASSERT_EQ(result[0].size(), 4u);
  for (size_t k = 1; k < 4; ++k) {
    EXPECT_GE(result[0][k - 1].score, result[0][k].score);
    for (size_t j = 0; j < k; ++j) EXPECT_NE(result[0][j].tokens, result[0][k].tokens) << j << k;
  }
}

TEST(Search, LengthPenaltyIsGnmts) {
  // ((5 + |Y|) / 6)^α by hand: 1 for one token whatever α, (15/6)^0.6 = 1.7328621 for ten.
  EXPECT_FLOAT_EQ(length_penalty(1, 0.6f), 1.f);
  EXPECT_NEAR(length_penalty(10, 0.6f), 1.7328621, 1e-6);
  EXPECT_NEAR(length_penalty(7, 1.5f), 2.8284271, 1e-6);  // (12/6)^1.5 = 2^1.5
  EXPECT_FLOAT_EQ(length_penalty(30, 0.f), 1.f);
}

}  // namespace
}  // namespace xlate
