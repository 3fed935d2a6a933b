// Hugging Face M2M100 and NLLB-200 directories as transformers saves them: random tiny
// M2M100ForConditionalGeneration models with M2M100Tokenizer (m2m100-relu) and NllbTokenizer
// (nllb-gelu), built and saved by transformers itself (tests/hf/make_m2m100_fixtures.py wrote
// tests/data/hf/, with transformers' own greedy `generate` outputs and the tokenizers' ids).
// xlate must give the same source ids (the source language's token first), the same output
// tokens (the forced target-language token first, with log P 0) and the same log-probabilities
// within float32 noise on 100 real sentences; the pre-norm forward, fairseq's positions and the
// forced token are what these models add to Marian's.
#include <cmath>
#include <filesystem>
#include <map>
#include <tuple>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/continuous_decoder.h"
#include "engine/ops/backend.h"
#include "engine/target_language.h"
#include "engine/translator.h"
#include "tests/hf_greedy_reference.h"
#include "tests/test_paths.h"

namespace xlate {
namespace {

using Json = nlohmann::json;

const std::string kFixtures = std::string(XLATE_TEST_DATA_DIR) + "/hf";

Json read_json(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return Json::parse(text.str());
}

// The fixture's languages as a request names them (BCP-47), whatever the model's codes.
constexpr char kSource[] = "en";
constexpr char kTarget[] = "de";

class HfM2M100 : public ::testing::TestWithParam<std::string> {};

TEST_P(HfM2M100, GreedyOutputsAndTokenizerEqualTransformers) {
  const std::string dir = kFixtures + "/" + GetParam();
  const Json expected = read_json(dir + "/expected.json");
  auto translator = Translator::Load(dir);
  ASSERT_TRUE(translator.ok()) << translator.status();
  const Tokenizer& tokenizer = (*translator)->tokenizer();
  const ModelConfig& config = (*translator)->model().config();
  ASSERT_TRUE(config.pre_norm);

  auto languages = language_tokens(tokenizer, kSource, kTarget);
  ASSERT_TRUE(languages.ok()) << languages.status();
  EXPECT_EQ(languages->source_prefix, std::vector<int32_t>{expected["source_lang_id"].get<int32_t>()});
  EXPECT_EQ(languages->forced_target, std::vector<int32_t>{expected["target_lang_id"].get<int32_t>()});

  std::vector<std::vector<int32_t>> sources;
  const Json& sentences = expected["sentences"];
  ASSERT_GE(sentences.size(), 100u);
  for (size_t i = 0; i < sentences.size(); ++i) {
    auto ids = tokenizer.encode(sentences[i].get<std::string>());
    ASSERT_TRUE(ids.ok()) << ids.status();
    ids->insert(ids->begin(), languages->source_prefix.begin(), languages->source_prefix.end());
    std::vector<int32_t> with_end = *ids;
    with_end.push_back(config.eos_id);
    EXPECT_EQ(with_end, expected["source_ids"][i].get<std::vector<int32_t>>())
        << "sentence " << i << ": " << sentences[i];
    sources.push_back(*ids);
  }

  TranslationOptions greedy;
  greedy.beam_size = 1;
  greedy.length_penalty = 0.f;  // lp = 1: the score is log P
  greedy.forced_start_tokens = languages->forced_target;
  testing::expect_greedy_equals_transformers(**translator, expected, sources, greedy);

  // The same through Translate(), which puts the language tokens in itself.
  std::vector<std::string> texts;
  for (size_t i = 0; i < 10; ++i) texts.push_back(sentences[i].get<std::string>());
  TranslationOptions plain = greedy;
  plain.forced_start_tokens.clear();
  auto translated = (*translator)->Translate(texts, plain, *languages);
  ASSERT_TRUE(translated.ok()) << translated.status();
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ((*translated)[i].hypotheses[0], expected["greedy"][i]["text"].get<std::string>());
  }
}

// Continuous batching (the server's decoder) forces the token per sentence slot: sentences with
// and without it, joining a running decode at different steps, get what the batch search gives.
TEST_P(HfM2M100, ContinuousBatchingForcesTheTargetLanguagePerSentence) {
  const std::string dir = kFixtures + "/" + GetParam();
  const Json expected = read_json(dir + "/expected.json");
  auto translator = Translator::Load(dir);
  ASSERT_TRUE(translator.ok()) << translator.status();
  auto languages = language_tokens((*translator)->tokenizer(), kSource, kTarget);
  ASSERT_TRUE(languages.ok());
  TranslationOptions forced;  // beam 4, as served
  forced.forced_start_tokens = languages->forced_target;
  TranslationOptions free = forced;
  free.forced_start_tokens.clear();

  std::vector<std::vector<int32_t>> sources;
  for (size_t i = 0; i < 12; ++i) {
    std::vector<int32_t> ids = expected["source_ids"][i].get<std::vector<int32_t>>();
    ids.pop_back();  // the end token is the decoder's to add
    sources.push_back(ids);
  }
  auto with = (*translator)->TranslateTokens(sources, forced);
  auto without = (*translator)->TranslateTokens(sources, free);
  ASSERT_TRUE(with.ok() && without.ok());
  int differ = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    ASSERT_FALSE((*with)[i][0].tokens.empty());
    EXPECT_EQ((*with)[i][0].tokens[0], languages->forced_target[0]);
    differ += (*with)[i][0].tokens != (*without)[i][0].tokens;
  }
  EXPECT_GT(differ, 6);  // the forced token changes what follows

  const auto [got_with, got_without] =
      testing::continuous_decode_alternating((*translator)->model(), sources, forced, free);
  for (size_t i = 0; i < sources.size(); ++i) {
    EXPECT_EQ(got_with[i], (*with)[i][0].tokens) << "sentence " << i;
    EXPECT_EQ(got_without[i], (*without)[i][0].tokens) << "sentence " << i;
  }
}

// Compute type int8 runs the pre-norm forward too (its products quantised, its norms float).
TEST_P(HfM2M100, Int8FollowsFloat32) {
  const std::string dir = kFixtures + "/" + GetParam();
  if (!int8_available(Device::kCPU).ok()) GTEST_SKIP() << "no int8 on this processor";
  auto tokenizer = Tokenizer::LoadDirectory(dir);
  ASSERT_TRUE(tokenizer.ok());
  auto languages = language_tokens(**tokenizer, kSource, kTarget);
  ASSERT_TRUE(languages.ok());
  std::vector<Translation> int8;
  testing::expect_int8_follows_float32(dir, *languages, &int8);
  ASSERT_FALSE(int8.empty());
  for (const Translation& translation : int8) {
    EXPECT_EQ(translation.best.tokens.at(0), languages->forced_target[0]);
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, HfM2M100, ::testing::Values("m2m100-relu", "nllb-gelu"));

TEST(HfM2M100Tokenizer, IdsAndTextsEqualTransformers) {
  const Json cases = read_json(kFixtures + "/m2m100_tokenizer_cases.json");
  int checked = 0;
  for (const auto& [name, model_cases] : cases.items()) {
    auto tokenizer = Tokenizer::LoadDirectory(kFixtures + "/" + name);
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    EXPECT_EQ((*tokenizer)->language_style(), LanguageTokenStyle::kSourceAndForcedTarget);
    for (const auto& [code, id] : model_cases["language_ids"].items()) {
      EXPECT_EQ((*tokenizer)->language_token(code), id.get<int>()) << name << ": " << code;
    }
    auto encode_cases = [&](const Json& entries, const char* ids_key, const char* language_key,
                            const std::string& fallback_language) {
      for (const Json& entry : entries) {
        // transformers reads "</s>" or "<unk>" written in a text as those special tokens;
        // xlate cuts a user's text as text.
        if (entry.value("has_special_token_text", false)) continue;
        const std::string language =
            entry.contains(language_key) ? entry[language_key].get<std::string>() : fallback_language;
        auto ids = (*tokenizer)->encode(entry["text"].get<std::string>());
        ASSERT_TRUE(ids.ok());
        ids->insert(ids->begin(), (*tokenizer)->language_token(language));
        ids->push_back(2);  // </s>, the model's eos
        EXPECT_EQ(*ids, entry[ids_key].get<std::vector<int32_t>>()) << name << ": " << entry["text"];
        ++checked;
      }
    };
    encode_cases(model_cases["encode"], "input_ids", "src_lang",
                 model_cases["src_lang"].get<std::string>());
    encode_cases(model_cases["encode_other_src_lang"], "input_ids", "src_lang", "");
    encode_cases(model_cases["encode_target"], "labels", "tgt_lang", "");
    for (const Json& entry : model_cases["decode"]) {
      auto text = (*tokenizer)->decode(entry["ids"].get<std::vector<int32_t>>());
      ASSERT_TRUE(text.ok()) << text.status();
      EXPECT_EQ(*text, entry["text"].get<std::string>()) << name << ": " << entry["ids"];
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
}

// The QA round: an M2M100 directory as transformers 5.25's save_pretrained writes it (no
// tokenizer.json, no language tokens in "added_tokens_decoder") was refused. Its language
// tokens are M2M100Tokenizer's: "language_codes"' list after the dictionary.
TEST(HfM2M100Tokenizer, DirectoriesTransformersSavesWithoutLanguageTokensLoad) {
  namespace fs = std::filesystem;
  const fs::path original = kFixtures + "/m2m100-relu";
  const fs::path saved = kFixtures + "/m2m100-saved-by-transformers";
  const fs::path dir = fs::path(testing::scratch_dir()) / "m2m100_saved_by_transformers";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* name : {"config.json", "generation_config.json", "model.safetensors"}) {
    fs::copy_file(original / name, dir / name);
  }
  for (const char* name : {"tokenizer_config.json", "sentencepiece.bpe.model", "vocab.json"}) {
    fs::copy_file(saved / name, dir / name);
  }
  const Json cases = read_json(kFixtures + "/m2m100_tokenizer_cases.json")["m2m100-relu"];
  auto translator = Translator::Load(dir.string());
  ASSERT_TRUE(translator.ok()) << translator.status();
  const Tokenizer& tokenizer = (*translator)->tokenizer();
  EXPECT_EQ(tokenizer.languages().size(), 100u);
  for (const auto& [code, id] : cases["language_ids"].items()) {
    EXPECT_EQ(tokenizer.language_token(code), id.get<int>()) << code;
  }
  // It translates as the directory transformers' model was saved in does.
  const Json expected = read_json((original / "expected.json").string());
  auto languages = language_tokens(tokenizer, kSource, kTarget);
  ASSERT_TRUE(languages.ok()) << languages.status();
  std::vector<std::string> texts;
  for (size_t i = 0; i < 10; ++i) texts.push_back(expected["sentences"][i].get<std::string>());
  TranslationOptions greedy;
  greedy.beam_size = 1;
  greedy.length_penalty = 0.f;
  auto translated = (*translator)->Translate(texts, greedy, *languages);
  ASSERT_TRUE(translated.ok()) << translated.status();
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ((*translated)[i].hypotheses[0], expected["greedy"][i]["text"].get<std::string>());
  }

  // WMT21's list (transformers 5.25: __en__ 401 ... __de__ 408), and a list it does not know.
  Json config = read_json((dir / "tokenizer_config.json").string());
  config["language_codes"] = "wmt21";
  std::ofstream(dir / "tokenizer_config.json", std::ios::trunc) << config.dump();
  auto wmt21 = Tokenizer::LoadDirectory(dir.string());
  ASSERT_TRUE(wmt21.ok()) << wmt21.status();
  EXPECT_EQ((*wmt21)->languages(),
            (std::vector<std::string>{"en", "ha", "is", "ja", "cs", "ru", "zh", "de"}));
  EXPECT_EQ((*wmt21)->language_token("en"), 401);
  EXPECT_EQ((*wmt21)->language_token("de"), 408);
  config["language_codes"] = "flores";
  std::ofstream(dir / "tokenizer_config.json", std::ios::trunc) << config.dump();
  const auto unknown = Tokenizer::LoadDirectory(dir.string());
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find(
                "\"language_codes\" is \"flores\"; expected \"m2m100\" or \"wmt21\""),
            std::string::npos)
      << unknown.status();
}

TEST(HfM2M100Languages, RequestsNameLanguagesInBcp47) {
  auto nllb = Tokenizer::LoadDirectory(kFixtures + "/nllb-gelu");
  ASSERT_TRUE(nllb.ok());
  // NLLB's codes carry a script: a tag without one takes the language's likely script.
  EXPECT_EQ(*language_token(**nllb, "de-CH", "f"), (*nllb)->language_token("deu_Latn"));
  EXPECT_EQ(*language_token(**nllb, "fr", "f"), (*nllb)->language_token("fra_Latn"));
  for (const auto& [source, target, fragment] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"", "de", "name a language in source_language_code"},
           {"en", "", "name a language in target_language_code"},
           {"en", "xx-!!", "is not a BCP-47 language code"},
           {"en", "ja", "\"ja\" is not one of this model's languages: deu_Latn"}}) {
    auto tokens = language_tokens(**nllb, source, target);
    ASSERT_FALSE(tokens.ok()) << source << " -> " << target;
    EXPECT_NE(tokens.status().message().find(fragment), std::string::npos)
        << tokens.status().message();
  }
}

}  // namespace
}  // namespace xlate
