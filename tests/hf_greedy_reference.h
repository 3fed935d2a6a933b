// transformers' greedy `generate` as the reference for a Hugging Face directory's translations:
// the fixtures of tests/data/hf/*/expected.json (written by tests/hf/make_*_fixtures.py) hold,
// per sentence, generate's ids (ending with the end token unless the length limit came
// first), the sum of their log-probabilities and the decoded text. One check for every model
// family (hf_marian_test.cc, hf_m2m100_test.cc), and int8 against float32 on the same fixture.
#pragma once

#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <utility>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/continuous_decoder.h"
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

// The fixture in `dir` translated with compute type int8 and in float32 (beam 4, as served;
// `languages` for a multilingual model): most best hypotheses are the same. Random weights of
// 32 channels make close calls common, and int8's rounding flips many of them (the ops
// themselves are held to the float product in packed_linear_test.cc); a wrong activation,
// norm or output layer in the int8 path would leave next to nothing the same. The int8
// translations go to *int8 for the caller's own checks.
inline void expect_int8_follows_float32(const std::string& dir, const LanguageTokens& languages,
                                        std::vector<Translation>* int8) {
  Placement int8_placement;
  int8_placement.weights = DType::kInt8;
  auto quantized = Translator::Load(dir, int8_placement);
  auto plain = Translator::Load(dir);
  ASSERT_TRUE(quantized.ok() && plain.ok());
  std::ifstream file(dir + "/expected.json");
  std::stringstream text;
  text << file.rdbuf();
  const nlohmann::json expected = nlohmann::json::parse(text.str());
  std::vector<std::string> sentences;
  for (const nlohmann::json& sentence : expected["sentences"]) sentences.push_back(sentence);
  ASSERT_GE(sentences.size(), 100u);
  const TranslationOptions options;
  auto a = (*quantized)->Translate(sentences, options, languages);
  auto b = (*plain)->Translate(sentences, options, languages);
  ASSERT_TRUE(a.ok() && b.ok());
  int same = 0;
  for (size_t i = 0; i < sentences.size(); ++i) same += (*a)[i].best.tokens == (*b)[i].best.tokens;
  EXPECT_GT(same, static_cast<int>(sentences.size()) * 4 / 10);
  *int8 = *std::move(a);
}

// The server's decoder (continuous batching) on `sources`, each sentence twice, under options
// `a` and `b` in turn, a few joining together and the rest between steps, so that sentences of
// both options share steps: each one's best tokens, under a (first) and under b (second).
inline std::pair<std::vector<std::vector<int32_t>>, std::vector<std::vector<int32_t>>>
continuous_decode_alternating(const TransformerModel& model,
                              const std::vector<std::vector<int32_t>>& sources,
                              const TranslationOptions& a, const TranslationOptions& b) {
  std::vector<std::vector<int32_t>> got_a(sources.size()), got_b(sources.size());
  ContinuousDecoderOptions limits;
  limits.max_sentences = 6;
  auto decoder = ContinuousDecoder::Create(model, limits);
  EXPECT_TRUE(decoder.ok()) << decoder.status();
  if (!decoder.ok()) return {got_a, got_b};
  std::map<int64_t, std::pair<size_t, bool>> pending;  // handle -> (sentence, under a)
  size_t next = 0;
  while (next < 2 * sources.size() || !pending.empty()) {
    if (next < 2 * sources.size() && (*decoder)->free_slots() > 0) {
      const size_t sentence = next / 2;
      const bool under_a = next % 2 == 0;
      auto handles = (*decoder)->Admit({sources[sentence]}, under_a ? a : b);
      EXPECT_TRUE(handles.ok()) << handles.status();
      if (!handles.ok()) return {got_a, got_b};
      pending[handles->front()] = {sentence, under_a};
      ++next;
      if (next % 3 != 0) continue;
    }
    for (ContinuousDecoder::Finished& finished : (*decoder)->Step()) {
      EXPECT_TRUE(finished.status.ok()) << finished.status;
      const auto [sentence, under_a] = pending.at(finished.handle);
      if (!finished.hypotheses.empty()) {
        (under_a ? got_a : got_b)[sentence] = finished.hypotheses.front().tokens;
      }
      pending.erase(finished.handle);
    }
  }
  return {got_a, got_b};
}

}  // namespace xlate::testing
