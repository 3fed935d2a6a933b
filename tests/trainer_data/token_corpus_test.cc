// TokenCorpus: reading the shared corpus, and refusing truncated or corrupt files with a
// message that says what is wrong.
#include "trainer/data/token_corpus.h"

#include <cstring>
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "engine/tokenizer.h"
#include "tests/trainer_data/test_support.h"

namespace xlate::trainer {
namespace {

using testing::read_bytes;
using testing::shared_corpus_dir;
using testing::test_scratch_dir;
using testing::write_bytes;

TEST(TokenCorpus, ReadsTheSharedCorpus) {
  absl::StatusOr<TokenCorpus> corpus = TokenCorpus::Open(shared_corpus_dir(), "train");
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  ASSERT_GT(corpus->size(), 2800);
  EXPECT_TRUE(corpus->verify_token_ids().ok());
  for (int64_t i = 0; i < corpus->size(); ++i) {
    ASSERT_GE(corpus->source(i).size, 2) << i;  // a piece and eos
    ASSERT_EQ(corpus->source(i)[corpus->source(i).size - 1], 3) << i;
    ASSERT_GE(corpus->target(i).size, 1) << i;
    ASSERT_EQ(corpus->source_length(i), corpus->source(i).size);
    ASSERT_EQ(corpus->target_length(i), corpus->target(i).size);
  }
  // Pair 0 is the first line of Multi30k train; it decodes back to its text.
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer =
      Tokenizer::Load(shared_corpus_dir() + "/spm.model");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const TokenSpan source = corpus->source(0), target = corpus->target(0);
  EXPECT_EQ(*(*tokenizer)->decode({source.begin(), source.end()}),
            testing::shared_source_lines()[0]);
  EXPECT_EQ(*(*tokenizer)->decode({target.begin(), target.end()}),
            testing::shared_target_lines()[0]);
}

// Copies the shared train split into a scratch directory, lets `damage` edit the bytes of
// `file` ("tokens" or "index"), and returns the status of opening the copy.
absl::Status open_damaged(const std::string& file,
                          const std::function<void(std::string*)>& damage) {
  const std::string directory = test_scratch_dir();
  for (const char* suffix : {".tokens", ".index"}) {
    std::string bytes = read_bytes(shared_corpus_dir() + "/train" + suffix);
    if (std::string(".") + file == suffix) damage(&bytes);
    write_bytes(directory + "/train" + suffix, bytes);
  }
  return TokenCorpus::Open(directory, "train").status();
}

void expect_refused(const absl::Status& status, const std::string& file,
                    const std::string& reason) {
  ASSERT_FALSE(status.ok()) << "a damaged " << file << " file was accepted";
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_NE(status.message().find("train." + file), std::string::npos) << status;
  EXPECT_NE(status.message().find(reason), std::string::npos) << status;
}

void put_u64(std::string* bytes, size_t offset, uint64_t value) {
  std::memcpy(&(*bytes)[offset], &value, sizeof value);
}

TEST(TokenCorpus, RefusesTruncatedFiles) {
  for (const char* file : {"tokens", "index"}) {
    expect_refused(open_damaged(file, [](std::string* b) { b->resize(b->size() - 4); }), file,
                   "truncated: the header counts");
    expect_refused(open_damaged(file, [](std::string* b) { b->resize(20); }), file,
                   "shorter than the 32-byte header");
  }
}

TEST(TokenCorpus, RefusesTrailingBytes) {
  expect_refused(open_damaged("tokens", [](std::string* b) { b->append(8, '\0'); }), "tokens",
                 "trailing bytes");
}

TEST(TokenCorpus, RefusesBadMagicAndVersion) {
  for (const char* file : {"tokens", "index"}) {
    expect_refused(open_damaged(file, [](std::string* b) { (*b)[0] = 'Y'; }), file, "bad magic");
    expect_refused(open_damaged(file, [](std::string* b) { (*b)[8] = 9; }), file,
                   "format version 9");
  }
}

TEST(TokenCorpus, RefusesCorruptIndexRecords) {
  // Record 5's offset (bytes 32 + 5 * 16 ...) no longer follows record 4.
  expect_refused(open_damaged("index", [](std::string* b) { put_u64(b, 32 + 5 * 16, 7); }),
                 "index", "record 5: offset 7");
  // A record whose length runs past the stored tokens.
  expect_refused(open_damaged("index",
                              [](std::string* b) {
                                const size_t last = b->size() - 16;
                                (*b)[last + 12] = 100;  // target_length of the last pair
                              }),
                 "index", "past the");
}

TEST(TokenCorpus, RefusesFilesOfDifferentRuns) {
  // Header token counts that disagree: this index describes one token fewer.
  expect_refused(open_damaged("index",
                              [](std::string* b) {
                                uint64_t count;
                                std::memcpy(&count, &(*b)[16], 8);
                                put_u64(b, 16, count - 1);
                              }),
                 "index", "differ from");
}

TEST(TokenCorpus, MissingSplitIsNotFound) {
  const absl::StatusOr<TokenCorpus> corpus = TokenCorpus::Open(shared_corpus_dir(), "test");
  ASSERT_FALSE(corpus.ok());
  EXPECT_EQ(corpus.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(corpus.status().message().find("test.tokens"), std::string::npos);
}

TEST(TokenCorpus, VerifyTokenIdsFindsAnIdOutsideTheVocabulary) {
  const std::string directory = test_scratch_dir();
  std::string tokens = read_bytes(shared_corpus_dir() + "/train.tokens");
  const int32_t bad = 1 << 20;
  std::memcpy(&tokens[32 + 4 * 10], &bad, 4);
  write_bytes(directory + "/train.tokens", tokens);
  write_bytes(directory + "/train.index", read_bytes(shared_corpus_dir() + "/train.index"));
  absl::StatusOr<TokenCorpus> corpus = TokenCorpus::Open(directory, "train");
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  const absl::Status verified = corpus->verify_token_ids();
  ASSERT_FALSE(verified.ok());
  EXPECT_NE(verified.message().find("token 10 is id 1048576"), std::string::npos) << verified;
}

}  // namespace
}  // namespace xlate::trainer
