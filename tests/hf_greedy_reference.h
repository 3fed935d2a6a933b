// transformers' greedy `generate` as the reference for a Hugging Face directory's translations:
// the fixtures of tests/data/hf/*/expected.json (written by tests/hf/make_*_fixtures.py) hold,
// per sentence, generate's ids (ending with the end token unless the length limit came
// first), the sum of their log-probabilities and the decoded text. One check for every model
// family (hf_marian_test.cc, hf_m2m100_test.cc).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/translator.h"

namespace xlate::testing {

// Greedy search of `sources` (token ids, no end token) with `greedy` (beam 1, α 0, plus what
// the model family forces) gives transformers' tokens, log P within float32 noise (1e-4
// relative) and text; the fixtures' outputs end both ways (by the end token, at the limit).
inline void expect_greedy_equals_transformers(const Translator& translator,
                                              const nlohmann::json& expected,
                                              const std::vector<std::vector<int32_t>>& sources,
                                              const TranslationOptions& greedy) {
  auto results = translator.TranslateTokens(sources, greedy);
  ASSERT_TRUE(results.ok()) << results.status();
  const int end = translator.model().config().eos_id;
  int ended = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    const nlohmann::json& reference = expected["greedy"][i];
    std::vector<int32_t> tokens = reference["ids"].get<std::vector<int32_t>>();
    if (!tokens.empty() && tokens.back() == end) {
      tokens.pop_back();
      ++ended;
    }
    const Hypothesis& best = (*results)[i][0];
    ASSERT_EQ(best.tokens, tokens) << "sentence " << i << ": " << expected["sentences"][i];
    const double log_prob = reference["log_prob"].get<double>();
    EXPECT_NEAR(best.log_prob, log_prob, 1e-4 * (1.0 + std::abs(log_prob))) << "sentence " << i;
    auto text = translator.tokenizer().decode(best.tokens);
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_EQ(*text, reference["text"].get<std::string>()) << "sentence " << i;
  }
  EXPECT_GT(ended, 10);
  EXPECT_LT(ended, static_cast<int>(sources.size()));
}

}  // namespace xlate::testing
