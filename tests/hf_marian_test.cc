// Hugging Face Marian directories (OPUS-MT's layout) as transformers saves them, loaded as they
// are: random tiny MarianMTModel models built and saved by transformers itself
// (tests/hf/make_marian_fixtures.py wrote tests/data/hf/, with transformers' own greedy
// `generate` outputs and MarianTokenizer's ids). xlate must give the same source ids, the same
// output tokens and the same log-probabilities (within float32 noise) on 100 real sentences, in
// float32 and int8 (tokens only where int8's rounding cannot flip a choice), and refuse what it
// does not implement by name.
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "engine/model_directory.h"
#include "engine/ops/backend.h"
#include "engine/translator.h"
#include "tests/hf_greedy_reference.h"
#include "tests/test_paths.h"

namespace xlate {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const std::string kFixtures = std::string(XLATE_TEST_DATA_DIR) + "/hf";

Json read_json(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return Json::parse(text.str());
}

class HfMarian : public ::testing::TestWithParam<std::string> {};

TEST_P(HfMarian, GreedyOutputsAndTokenizerEqualTransformers) {
  const std::string dir = kFixtures + "/" + GetParam();
  const Json expected = read_json(dir + "/expected.json");
  auto translator = Translator::Load(dir);
  ASSERT_TRUE(translator.ok()) << translator.status();
  const Tokenizer& tokenizer = (*translator)->tokenizer();
  const ModelConfig& config = (*translator)->model().config();

  std::vector<std::vector<int32_t>> sources;
  const Json& sentences = expected["sentences"];
  ASSERT_GE(sentences.size(), 100u);
  for (size_t i = 0; i < sentences.size(); ++i) {
    auto ids = tokenizer.encode(sentences[i].get<std::string>());
    ASSERT_TRUE(ids.ok()) << ids.status();
    std::vector<int32_t> with_end = *ids;
    with_end.push_back(config.eos_id);
    EXPECT_EQ(with_end, expected["source_ids"][i].get<std::vector<int32_t>>())
        << "sentence " << i << ": " << sentences[i];
    sources.push_back(*ids);
  }

  TranslationOptions greedy;
  greedy.beam_size = 1;
  greedy.length_penalty = 0.f;  // lp = 1: the score is log P
  testing::expect_greedy_equals_transformers(**translator, expected, sources, greedy);
}

TEST_P(HfMarian, Int8FollowsFloat32) {
  const std::string dir = kFixtures + "/" + GetParam();
  if (!int8_available(Device::kCPU).ok()) GTEST_SKIP() << "no int8 on this processor";
  std::vector<Translation> int8;
  testing::expect_int8_follows_float32(dir, {}, &int8);
}

// The sources of a fixture's first `count` sentences (no end token: the decoder adds it).
std::vector<std::vector<int32_t>> fixture_sources(const Json& expected, size_t count) {
  std::vector<std::vector<int32_t>> sources;
  for (size_t i = 0; i < count; ++i) {
    std::vector<int32_t> ids = expected["source_ids"][i].get<std::vector<int32_t>>();
    ids.pop_back();
    sources.push_back(ids);
  }
  return sources;
}

// Whether some n-gram occurs twice in `tokens` (the decoder's start token first, as the guard
// sees its history).
bool repeats_an_ngram(std::vector<int32_t> tokens, int32_t start, size_t n) {
  tokens.insert(tokens.begin(), start);
  std::set<std::vector<int32_t>> seen;
  for (size_t i = 0; i + n <= tokens.size(); ++i) {
    if (!seen.insert({tokens.begin() + i, tokens.begin() + i + n}).second) return true;
  }
  return false;
}

// repetition_penalty and no_repeat_ngram_size give transformers' greedy outputs and their log
// P (tests/hf/make_guard_references.py wrote guards.json): penalties above and below 1, n-gram
// bans, and both at once. The random models repeat themselves, so the guards change many of
// the outputs: a guard that did nothing would fail.
TEST_P(HfMarian, RepetitionGuardsEqualTransformersGreedy) {
  const std::string dir = kFixtures + "/" + GetParam();
  const Json expected = read_json(dir + "/expected.json");
  const Json guards = read_json(dir + "/guards.json");
  auto translator = Translator::Load(dir);
  ASSERT_TRUE(translator.ok()) << translator.status();
  const int end = (*translator)->model().config().eos_id;
  const std::vector<std::vector<int32_t>> sources =
      fixture_sources(expected, guards["sentences"].get<size_t>());
  for (const Json& guarded : guards["cases"]) {
    TranslationOptions greedy;
    greedy.beam_size = 1;
    greedy.length_penalty = 0.f;
    greedy.repetition_penalty = guarded["options"]["repetition_penalty"].get<float>();
    greedy.no_repeat_ngram_size = guarded["options"]["no_repeat_ngram_size"].get<int>();
    SCOPED_TRACE(guarded["options"].dump());
    auto results = (*translator)->TranslateTokens(sources, greedy);
    ASSERT_TRUE(results.ok()) << results.status();
    int changed = 0;
    for (size_t i = 0; i < sources.size(); ++i) {
      std::vector<int32_t> tokens = guarded["greedy"][i]["ids"].get<std::vector<int32_t>>();
      if (!tokens.empty() && tokens.back() == end) tokens.pop_back();
      const Hypothesis& best = (*results)[i][0];
      ASSERT_EQ(best.tokens, tokens) << "sentence " << i;
      const double log_prob = guarded["greedy"][i]["log_prob"].get<double>();
      EXPECT_NEAR(best.log_prob, log_prob, 1e-4 * (1.0 + std::abs(log_prob))) << "sentence " << i;
      std::vector<int32_t> unguarded = expected["greedy"][i]["ids"].get<std::vector<int32_t>>();
      if (!unguarded.empty() && unguarded.back() == end) unguarded.pop_back();
      changed += best.tokens != unguarded;
    }
    EXPECT_GT(changed, static_cast<int>(sources.size()) / 4);
  }
}

// Beam search (as served) under no_repeat_ngram_size 2 repeats no bigram, where without it many
// outputs of these models do; and the server's decoder, with guarded and unguarded sentences
// sharing its steps, gives each what the batch search gives it alone.
TEST_P(HfMarian, NoRepeatNgramHoldsUnderBeamSearchAndContinuousBatching) {
  const std::string dir = kFixtures + "/" + GetParam();
  const Json expected = read_json(dir + "/expected.json");
  auto translator = Translator::Load(dir);
  ASSERT_TRUE(translator.ok()) << translator.status();
  const int32_t start = (*translator)->model().config().decoder_start_id;
  const std::vector<std::vector<int32_t>> sources = fixture_sources(expected, 16);
  TranslationOptions plain;  // beam 4, α 0.6
  TranslationOptions guarded = plain;
  guarded.no_repeat_ngram_size = 2;
  auto with = (*translator)->TranslateTokens(sources, guarded);
  auto without = (*translator)->TranslateTokens(sources, plain);
  ASSERT_TRUE(with.ok() && without.ok());
  int repeating = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    for (const Hypothesis& hypothesis : (*with)[i]) {
      EXPECT_FALSE(repeats_an_ngram(hypothesis.tokens, start, 2)) << "sentence " << i;
    }
    repeating += repeats_an_ngram((*without)[i][0].tokens, start, 2);
  }
  EXPECT_GT(repeating, static_cast<int>(sources.size()) / 4);

  const auto [got_guarded, got_plain] =
      testing::continuous_decode_alternating((*translator)->model(), sources, guarded, plain);
  for (size_t i = 0; i < sources.size(); ++i) {
    EXPECT_EQ(got_guarded[i], (*with)[i][0].tokens) << "sentence " << i;
    EXPECT_EQ(got_plain[i], (*without)[i][0].tokens) << "sentence " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, HfMarian,
                         ::testing::Values("marian-relu-tied", "marian-swish-separate",
                                           "marian-gelu-multilingual"));

TEST(HfMarianTokenizer, IdsAndTextsEqualMarianTokenizer) {
  const Json cases = read_json(kFixtures + "/tokenizer_cases.json");
  int checked = 0;
  for (const auto& [name, model_cases] : cases.items()) {
    auto tokenizer = Tokenizer::LoadDirectory(kFixtures + "/" + name);
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    for (const Json& entry : model_cases["encode"]) {
      const std::string text = entry["text"].get<std::string>();
      // transformers reads "</s>", "<unk>" or "<pad>" written in a text as those special
      // tokens (a "</s>" typed by a user ends the source early); xlate keeps a user's text
      // text, and cuts it into pieces like any other.
      if (text.find("</s>") != std::string::npos || text.find("<unk>") != std::string::npos ||
          text.find("<pad>") != std::string::npos) {
        continue;
      }
      auto ids = (*tokenizer)->encode(text);
      ASSERT_TRUE(ids.ok());
      std::vector<int32_t> expected = entry["input_ids"].get<std::vector<int32_t>>();
      ASSERT_FALSE(expected.empty());
      expected.pop_back();  // MarianTokenizer's </s>; the model's eos is the caller's
      EXPECT_EQ(*ids, expected) << name << ": " << entry["text"];
      ++checked;
    }
    for (const Json& entry : model_cases["decode"]) {
      auto text = (*tokenizer)->decode(entry["ids"].get<std::vector<int32_t>>());
      ASSERT_TRUE(text.ok());
      EXPECT_EQ(*text, entry["text"].get<std::string>()) << name << ": " << entry["ids"];
      ++checked;
    }
  }
  EXPECT_GT(checked, 40);
}

// A copy of a fixture directory whose config.json (and generation_config.json) `edit` changes.
std::string edited_copy(const std::string& name, const std::function<void(Json&)>& edit,
                        const std::string& file = "config.json") {
  // One directory per test and call: CTest runs the tests of this file as processes side by
  // side.
  static int calls = 0;
  const std::string copy = absl::StrCat(
      XLATE_TEST_SCRATCH, "/hf_", name, "_",
      ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_", ++calls);
  fs::remove_all(copy);
  fs::create_directories(copy);
  fs::copy(kFixtures + "/" + name, copy, fs::copy_options::recursive);
  Json json = read_json(copy + "/" + file);
  edit(json);
  std::ofstream(copy + "/" + file) << json.dump(2);
  return copy;
}

void expect_refused(const std::string& dir, const std::vector<std::string>& fragments) {
  auto translator = Translator::Load(dir);
  ASSERT_FALSE(translator.ok());
  for (const std::string& fragment : fragments) {
    EXPECT_NE(translator.status().message().find(fragment), std::string::npos)
        << translator.status().message() << "\nlacks: " << fragment;
  }
}

TEST(HfMarianRefusals, WhatXlateDoesNotImplementIsNamed) {
  expect_refused(edited_copy("marian-relu-tied", [](Json& c) { c["activation_function"] = "tanh"; }),
                 {"\"activation_function\" = \"tanh\" is not supported", "\"swish\""});
  expect_refused(edited_copy("marian-relu-tied", [](Json& c) { c["model_type"] = "t5"; }),
                 {"\"model_type\" = \"t5\" is not supported", "\"marian\"", "\"m2m_100\""});
  // A Marian directory called M2M100 lacks the final layer norms of a pre-norm model.
  expect_refused(edited_copy("marian-relu-tied", [](Json& c) { c["model_type"] = "m2m_100"; }),
                 {"\"model.encoder.layer_norm.weight\" is missing"});
  expect_refused(edited_copy("marian-relu-tied", [](Json& c) { c["normalize_before"] = true; }),
                 {"\"normalize_before\" = true is not supported"});
  expect_refused(
      edited_copy("marian-relu-tied", [](Json& c) { c["add_final_layer_norm"] = true; }),
      {"\"add_final_layer_norm\" = true"});
  expect_refused(edited_copy("marian-relu-tied",
                             [](Json& c) { c["bad_words_ids"] = Json::parse("[[5, 6]]"); },
                             "generation_config.json"),
                 {"generation_config.json", "\"bad_words_ids\"", "several tokens"});
  expect_refused(edited_copy("marian-relu-tied", [](Json& c) { c["scale_embedding"] = "yes"; }),
                 {"\"scale_embedding\" has the wrong type"});
}

TEST(HfMarianRefusals, MissingFilesAreNamed) {
  const std::string no_vocab = edited_copy("marian-relu-tied", [](Json&) {});
  fs::remove(no_vocab + "/vocab.json");
  expect_refused(no_vocab, {"no tokenizer", "source.spm, target.spm and vocab.json"});
  const std::string pickled = edited_copy("marian-relu-tied", [](Json&) {});
  fs::rename(pickled + "/model.safetensors", pickled + "/pytorch_model.bin");
  expect_refused(pickled,
                 {"pytorch_model.bin", "scripts/convert_pytorch_to_safetensors.py"});
}

// forced_eos_token_id = eos (every OPUS-MT model): transformers ends a translation that
// reaches the limit with the end token in the limit's last place. The fixtures have it off; with
// it on, exactly the outputs cut by the limit lose their last token, the others are unchanged.
TEST(HfMarianForcedEnd, ATranslationCutByTheLimitEndsOneTokenEarlier) {
  const std::string name = "marian-relu-tied";
  const std::string forced =
      edited_copy(name, [](Json& c) { c["forced_eos_token_id"] = 0; });
  auto with = Translator::Load(forced);
  auto without = Translator::Load(kFixtures + "/" + name);
  ASSERT_TRUE(with.ok() && without.ok()) << with.status();
  EXPECT_TRUE((*with)->model().config().end_forced_at_limit);
  const Json expected = read_json(kFixtures + "/" + name + "/expected.json");
  std::vector<std::vector<int32_t>> sources;
  for (const Json& ids : expected["source_ids"]) {
    std::vector<int32_t> source = ids.get<std::vector<int32_t>>();
    source.pop_back();  // </s>
    sources.push_back(source);
  }
  TranslationOptions greedy;
  greedy.beam_size = 1;
  greedy.length_penalty = 0.f;
  auto a = (*with)->TranslateTokens(sources, greedy);
  auto b = (*without)->TranslateTokens(sources, greedy);
  ASSERT_TRUE(a.ok() && b.ok());
  int cut = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    const std::vector<int32_t>& free = (*b)[i][0].tokens;
    const std::vector<int32_t>& ended = (*a)[i][0].tokens;
    const size_t limit = sources[i].size() + 50;
    if (free.size() == limit) {  // cut by the limit
      ++cut;
      EXPECT_EQ(ended, std::vector<int32_t>(free.begin(), free.end() - 1)) << "sentence " << i;
    } else {
      EXPECT_EQ(ended, free) << "sentence " << i;
    }
  }
  EXPECT_GT(cut, 0);
  expect_refused(edited_copy(name, [](Json& c) { c["forced_eos_token_id"] = 5; }),
                 {"\"forced_eos_token_id\" = 5 is not supported"});
}

TEST(HfMarianSinusoid, ColumnsAreSinesThenCosines) {
  const Tensor table = marian_sinusoidal_positions(4, 6);
  const float* v = table.data<float>();
  for (int pos = 0; pos < 4; ++pos) {
    for (int j = 0; j < 3; ++j) {
      const double angle = pos / std::pow(10000.0, 2.0 * j / 6);
      EXPECT_FLOAT_EQ(v[pos * 6 + j], static_cast<float>(std::sin(angle)));
      EXPECT_FLOAT_EQ(v[pos * 6 + 3 + j], static_cast<float>(std::cos(angle)));
    }
  }
}

}  // namespace
}  // namespace xlate
