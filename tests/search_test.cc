// Beam search and greedy search: exhaustive optimality against brute-force enumeration on a
// tiny model, beam 1 == greedy, length limits and early stopping on scripted decoders.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "engine/decoding/search.h"
#include "engine/model_directory.h"
#include "engine/transformer.h"
#include "engine/transformer_decoder.h"
#include "tests/brute_force_search.h"
#include "tests/random_tensor.h"

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
    TransformerDecoder decoder(*model, encoded.output, encoded.lengths, options.beam_size, max_length);
    const auto found = make_beam_search()->search(decoder, {max_length}, options);
    ASSERT_EQ(found[0].size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(found[0][k].tokens, truth[k].tokens) << "seed " << seed << " rank " << k;
      EXPECT_NEAR(found[0][k].score, truth[k].score, 1e-4);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(LengthPenalties, TinyModelSearch, ::testing::Values(0.f, 0.6f, 1.5f));

TEST(Search, BeamOfOneIsGreedy) {
  for (uint64_t seed : {21u, 22u, 23u, 24u}) {
    auto model = tiny_model(seed);
    const Encoded encoded = encode(*model, {5, 4, kEnd});
    SearchOptions options;
    options.beam_size = 1;
    TransformerDecoder beam_decoder(*model, encoded.output, encoded.lengths, 1, 12);
    TransformerDecoder greedy_decoder(*model, encoded.output, encoded.lengths, 1, 12);
    const auto beam = make_beam_search()->search(beam_decoder, {12}, options);
    const auto greedy = make_greedy_search()->search(greedy_decoder, {12}, options);
    EXPECT_EQ(beam[0][0].tokens, greedy[0][0].tokens) << "seed " << seed;
    EXPECT_NEAR(beam[0][0].score, greedy[0][0].score, 1e-5);
  }
}

// A decoder whose next-token distribution is a fixed function of (row's history length,
// token); counts its steps and checks that the search keeps rows and tokens consistent.
class ScriptedDecoder : public IncrementalDecoder {
 public:
  ScriptedDecoder(int vocabulary, std::function<float(int step, int token)> log_prob)
      : vocabulary_(vocabulary), log_prob_(std::move(log_prob)) {}
  TopK step(const std::vector<int32_t>& tokens, const std::vector<float>& row_scores,
            int k) override {
    EXPECT_EQ(int64_t(tokens.size()), rows_);
    EXPECT_EQ(int64_t(row_scores.size()), rows_);
    k = std::min(k, vocabulary_);
    TopK top{Tensor::empty({rows_, k}, DType::kFloat32), Tensor::empty({rows_, k}, DType::kInt32)};
    std::vector<int32_t> ids(static_cast<size_t>(vocabulary_));
    for (int64_t r = 0; r < rows_; ++r) {
      std::iota(ids.begin(), ids.end(), 0);
      std::stable_sort(ids.begin(), ids.end(),
                       [&](int32_t a, int32_t b) { return log_prob_(steps_, a) > log_prob_(steps_, b); });
      for (int j = 0; j < k; ++j) {
        top.values.data<float>()[r * k + j] = row_scores[r] + log_prob_(steps_, ids[j]);
        top.indices.data<int32_t>()[r * k + j] = ids[j];
      }
    }
    ++steps_;
    rows_per_step_.push_back(rows_);
    return top;
  }
  void select_rows(const std::vector<int32_t>& rows) override {
    for (int32_t row : rows) EXPECT_LT(row, rows_);
    rows_ = int64_t(rows.size());
  }
  void set_rows(int64_t rows) { rows_ = rows; }
  int steps() const { return steps_; }
  const std::vector<int64_t>& rows_per_step() const { return rows_per_step_; }

 private:
  int vocabulary_;
  std::function<float(int, int)> log_prob_;
  int64_t rows_ = 1;
  int steps_ = 0;
  std::vector<int64_t> rows_per_step_;
};

TEST(Search, FirstStepDecodesOneRowPerSentence) {
  // The beam's other rows start as copies of the first at log P -inf: the host search decodes
  // them from the second step on, once they hold hypotheses of their own.
  auto never_end = [](int, int token) { return token == kEnd ? -50.f : std::log(0.2f); };
  ScriptedDecoder decoder(6, never_end);
  decoder.set_rows(3);
  SearchOptions options;
  options.beam_size = 4;
  const auto result = make_beam_search()->search(decoder, {3, 3, 3}, options);
  ASSERT_EQ(result.size(), 3u);
  EXPECT_EQ(decoder.rows_per_step(), (std::vector<int64_t>{3, 12, 12}));
}

TEST(Search, OutputNeverExceedsMaxLength) {
  // The end token is never likely: every hypothesis runs to the limit.
  auto never_end = [](int, int token) { return token == kEnd ? -50.f : std::log(0.2f); };
  for (int max_length : {1, 3, 7}) {
    for (auto* make : {&make_beam_search, &make_greedy_search}) {
      ScriptedDecoder decoder(6, never_end);
      SearchOptions options;
      const auto result = (*make)()->search(decoder, {max_length}, options);
      ASSERT_FALSE(result[0].empty());
      EXPECT_EQ(int(result[0][0].tokens.size()), max_length);
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
  const auto result = make_beam_search()->search(decoder, {40}, options);
  EXPECT_TRUE(result[0][0].tokens.empty());
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
  const auto result = make_beam_search()->search(decoder, {10}, options);
  EXPECT_EQ(result[0][0].tokens, (std::vector<int32_t>{4, 4, 4}));
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
  const auto result = make_beam_search()->search(decoder, {40}, options);
  EXPECT_EQ(result[0][0].tokens, (std::vector<int32_t>{4}));
}

TEST(Search, ABeamOfOneStepsOverAForbiddenEnd) {
  // The end token is the most likely at every step but forbidden before 3 tokens: a beam of 1
  // needs candidates beyond its best one (2·B + 1 per row) to continue at all.
  auto always_end = [](int, int token) { return token == kEnd ? std::log(0.9f) : std::log(0.02f); };
  ScriptedDecoder decoder(6, always_end);
  SearchOptions options;
  options.beam_size = 1;
  options.min_length = 3;
  const auto result = make_beam_search()->search(decoder, {10}, options);
  ASSERT_FALSE(result[0].empty());
  EXPECT_EQ(result[0][0].tokens.size(), 3u);
}

TEST(Search, MinLengthForbidsEarlyEnd) {
  auto always_end = [](int, int token) { return token == kEnd ? std::log(0.9f) : std::log(0.02f); };
  for (auto* make : {&make_beam_search, &make_greedy_search}) {
    ScriptedDecoder decoder(6, always_end);
    SearchOptions options;
    options.min_length = 3;
    const auto result = (*make)()->search(decoder, {10}, options);
    EXPECT_EQ(result[0][0].tokens.size(), 3u);
  }
}

TEST(Search, NBestListIsSortedAndSized) {
  auto model = tiny_model(31);
  const Encoded encoded = encode(*model, {4, 4, 5, kEnd});
  SearchOptions options;
  options.beam_size = 4;
  options.n_best = 4;
  TransformerDecoder decoder(*model, encoded.output, encoded.lengths, 4, 10);
  const auto result = make_beam_search()->search(decoder, {10}, options);
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
