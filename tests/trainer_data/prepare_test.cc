// prepare_corpus: the shared vocabulary, filtering and its counts, corpus.json, gzip input,
// and the errors for mismatched files, bad options and unwritable output.
#include "trainer/data/prepare.h"

#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/tokenizer.h"
#include "tests/trainer_data/test_support.h"
#include "trainer/data/token_corpus.h"

namespace xlate::trainer {
namespace {

using testing::read_bytes;
using testing::shared_corpus_dir;
using testing::test_scratch_dir;
using testing::write_gzip_lines;
using testing::write_text_lines;

const std::string kShortEn = "A dog runs on the beach.";
const std::string kShortDe = "Ein Hund rennt am Strand.";

// Options that encode `stem`.en / `stem`.de with the shared vocabulary into `stem`-out.
PrepareOptions reuse_options(const std::string& stem) {
  PrepareOptions options;
  options.train_source = stem + ".en";
  options.train_target = stem + ".de";
  options.output_directory = stem + "-out";
  options.spm_model = shared_corpus_dir() + "/spm.model";
  return options;
}

std::string repeat(const std::string& text, int times) {
  std::string out = text;
  for (int i = 1; i < times; ++i) out += " " + text;
  return out;
}

void expect_error_mentions(const absl::Status& status, const std::vector<std::string>& parts) {
  ASSERT_FALSE(status.ok());
  for (const std::string& part : parts) {
    EXPECT_NE(status.message().find(part), std::string::npos)
        << "\"" << part << "\" missing from: " << status;
  }
}

TEST(Prepare, SharedCorpusHasVocabularyCountsAndCorpusJson) {
  const std::string directory = shared_corpus_dir();
  std::ifstream file(directory + "/corpus.json");
  const nlohmann::json json = nlohmann::json::parse(file);
  EXPECT_EQ(json["format_version"], 1);
  const int vocab_size = json["vocab_size"];
  EXPECT_GT(vocab_size, 500);
  EXPECT_LE(vocab_size, testing::kSharedVocabSize);
  EXPECT_EQ(json["options"]["model_type"], "bpe");
  EXPECT_EQ(json["options"]["max_length"], 64);
  for (const auto& [split, pairs] :
       {std::pair{"train", testing::kSharedPairs}, std::pair{"valid", testing::kSharedValidPairs}}) {
    const nlohmann::json& stats = json["splits"][split];
    EXPECT_EQ(stats["input_pairs"], pairs) << split;
    EXPECT_EQ(stats["kept_pairs"].get<int64_t>() + stats["dropped_empty"].get<int64_t>() +
                  stats["dropped_too_long"].get<int64_t>() + stats["dropped_ratio"].get<int64_t>(),
              pairs)
        << split;
    EXPECT_GT(stats["kept_pairs"].get<int64_t>(), pairs * 95 / 100) << split;
    absl::StatusOr<TokenCorpus> corpus = TokenCorpus::Open(directory, split);
    ASSERT_TRUE(corpus.ok()) << corpus.status();
    EXPECT_EQ(corpus->size(), stats["kept_pairs"]);
    EXPECT_EQ(corpus->vocab_size(), vocab_size);
    EXPECT_EQ(corpus->token_count(), stats["source_tokens"].get<int64_t>() +
                                         stats["target_tokens"].get<int64_t>());
  }
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::Load(directory + "/spm.model");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  EXPECT_EQ((*tokenizer)->vocab_size(), vocab_size);
  EXPECT_EQ((*tokenizer)->piece_of(3), "</s>");
}

TEST(Prepare, DropsAndCountsEmptyOverLongAndOverRatioPairs) {
  const std::string stem = test_scratch_dir() + "/mixed";
  const std::string long_en = repeat(kShortEn, 8), long_de = repeat(kShortDe, 8);
  const std::string wordy_de = "Ein kleiner brauner Hund spielt mit einem roten Ball im Garten.";
  write_text_lines(stem + ".en", {kShortEn, "", kShortEn, long_en, "Dog.", "Two men talk.", "  "});
  write_text_lines(stem + ".de", {kShortDe, kShortDe, "", long_de, wordy_de, "Zwei Männer reden.",
                                  "Leer"});
  PrepareOptions options = reuse_options(stem);
  options.max_length = 40;
  options.max_length_ratio = 3.0;
  options.valid_source = options.train_source, options.valid_target = options.train_target;
  absl::StatusOr<PrepareReport> report = prepare_corpus(options);
  ASSERT_TRUE(report.ok()) << report.status();

  EXPECT_EQ(report->train.input_pairs, 7);
  EXPECT_EQ(report->train.dropped_empty, 3);  // empty source, empty target, blank source
  EXPECT_EQ(report->train.dropped_too_long, 1);
  EXPECT_EQ(report->train.dropped_ratio, 1);
  EXPECT_EQ(report->train.kept_pairs, 2);
  // The ratio filter cleans training data only.
  ASSERT_TRUE(report->has_valid);
  EXPECT_EQ(report->valid.dropped_ratio, 0);
  EXPECT_EQ(report->valid.kept_pairs, 3);

  // Kept pairs hold the tokenizer's ids; sources end with eos, targets have no specials.
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer =
      Tokenizer::Load(options.output_directory + "/spm.model");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  absl::StatusOr<TokenCorpus> corpus = TokenCorpus::Open(options.output_directory, "train");
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  ASSERT_EQ(corpus->size(), 2);
  std::vector<int32_t> expected_source = *(*tokenizer)->encode(kShortEn);
  expected_source.push_back(3);
  const std::vector<int32_t> expected_target = *(*tokenizer)->encode(kShortDe);
  EXPECT_EQ(std::vector<int32_t>(corpus->source(0).begin(), corpus->source(0).end()),
            expected_source);
  EXPECT_EQ(std::vector<int32_t>(corpus->target(0).begin(), corpus->target(0).end()),
            expected_target);
  EXPECT_EQ(report->train.source_tokens + report->train.target_tokens, corpus->token_count());
  EXPECT_TRUE(corpus->verify_token_ids().ok());
}

TEST(Prepare, GzipInputGivesTheSameFiles) {
  const std::string directory = test_scratch_dir();
  const std::vector<std::string> en(testing::shared_source_lines().begin(),
                                    testing::shared_source_lines().begin() + 400);
  const std::vector<std::string> de(testing::shared_target_lines().begin(),
                                    testing::shared_target_lines().begin() + 400);
  write_text_lines(directory + "/plain.en", en);
  write_text_lines(directory + "/plain.de", de);
  write_gzip_lines(directory + "/packed.en", en);  // no .gz: told by content
  write_gzip_lines(directory + "/packed.de", de);
  for (const std::string& stem : {directory + "/plain", directory + "/packed"}) {
    const absl::StatusOr<PrepareReport> report = prepare_corpus(reuse_options(stem));
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->train.input_pairs, 400);
  }
  for (const char* file : {"/train.tokens", "/train.index"}) {
    EXPECT_EQ(read_bytes(directory + "/plain-out" + file), read_bytes(directory + "/packed-out" + file))
        << file;
  }
}

TEST(Prepare, EncodingThreadsDoNotChangeTheFiles) {
  const std::string directory = test_scratch_dir();
  const std::vector<std::string>& en = testing::shared_source_lines();
  const std::vector<std::string>& de = testing::shared_target_lines();
  write_text_lines(directory + "/text.en", std::vector<std::string>(en.begin(), en.begin() + 600));
  write_text_lines(directory + "/text.de", std::vector<std::string>(de.begin(), de.begin() + 600));
  PrepareOptions options = reuse_options(directory + "/text");
  std::string previous;
  for (const int threads : {1, 3}) {
    options.threads = threads;
    ASSERT_TRUE(prepare_corpus(options).ok());
    const std::string tokens = read_bytes(options.output_directory + "/train.tokens");
    if (!previous.empty()) {
      EXPECT_EQ(tokens, previous);
    }
    previous = tokens;
  }
}

TEST(Prepare, AFailedRunLeavesNoCorpusJson) {
  const std::string stem = test_scratch_dir() + "/text";
  write_text_lines(stem + ".en", {kShortEn, kShortEn});
  write_text_lines(stem + ".de", {kShortDe, kShortDe});
  const PrepareOptions options = reuse_options(stem);
  ASSERT_TRUE(prepare_corpus(options).ok());
  ASSERT_TRUE(std::ifstream(options.output_directory + "/corpus.json").good());
  write_text_lines(stem + ".de", {kShortDe});
  ASSERT_FALSE(prepare_corpus(options).ok());
  EXPECT_FALSE(std::ifstream(options.output_directory + "/corpus.json").good());
}

TEST(Prepare, MismatchedLineCountsNameBothFilesAndCounts) {
  const std::string stem = test_scratch_dir() + "/uneven";
  write_text_lines(stem + ".en", {kShortEn, kShortEn, kShortEn});
  write_text_lines(stem + ".de", {kShortDe, kShortDe});
  PrepareOptions reuse = reuse_options(stem);
  expect_error_mentions(prepare_corpus(reuse).status(),
                        {stem + ".en has 3 lines", stem + ".de has 2"});
  PrepareOptions train = reuse;  // the SentencePiece input pass finds it too
  train.spm_model.clear();
  train.vocab_size = 50;
  expect_error_mentions(prepare_corpus(train).status(),
                        {stem + ".en has 3 lines", stem + ".de has 2"});
}

TEST(Prepare, InvalidUtf8NamesFileAndLine) {
  const std::string stem = test_scratch_dir() + "/latin1";
  write_text_lines(stem + ".en", {kShortEn, kShortEn});
  write_text_lines(stem + ".de", {kShortDe, "Gr\xfc\xdf" "e"});
  expect_error_mentions(prepare_corpus(reuse_options(stem)).status(),
                        {stem + ".de:2: invalid UTF-8"});
}

TEST(Prepare, UnwritableOutputDirectoryIsAClearError) {
  const std::string stem = test_scratch_dir() + "/text";
  write_text_lines(stem + ".en", {kShortEn});
  write_text_lines(stem + ".de", {kShortDe});
  write_text_lines(stem + ".file", {"not a directory"});
  PrepareOptions options = reuse_options(stem);
  options.output_directory = stem + ".file/corpus";
  expect_error_mentions(prepare_corpus(options).status(),
                        {"cannot create the output directory", stem + ".file/corpus"});
}

TEST(Prepare, RejectsBadOptionsNamingTheLimit) {
  const std::string stem = test_scratch_dir() + "/text";
  PrepareOptions options = reuse_options(stem);
  options.model_type = "wordpiece";
  expect_error_mentions(prepare_corpus(options).status(), {"model_type \"wordpiece\""});
  options = reuse_options(stem);
  options.max_length_ratio = 0.5;
  expect_error_mentions(prepare_corpus(options).status(), {"max_length_ratio 0.5", ">= 1"});
  options = reuse_options(stem);
  options.max_length = 1;
  expect_error_mentions(prepare_corpus(options).status(), {"max_length 1", ">= 2"});
  options = reuse_options(stem);
  options.valid_source = stem + ".en";
  expect_error_mentions(prepare_corpus(options).status(), {"both validation files"});
  options = reuse_options(stem);
  options.spm_model.clear();
  options.vocab_size = 4;
  expect_error_mentions(prepare_corpus(options).status(), {"vocab_size 4"});
}

TEST(Prepare, MissingSpmModelIsNotFound) {
  const std::string stem = test_scratch_dir() + "/text";
  write_text_lines(stem + ".en", {kShortEn});
  write_text_lines(stem + ".de", {kShortDe});
  PrepareOptions options = reuse_options(stem);
  options.spm_model = stem + "/missing.model";
  expect_error_mentions(prepare_corpus(options).status(), {stem + "/missing.model"});
}

}  // namespace
}  // namespace xlate::trainer
