// make_training_batch: BOS/EOS placement, padding, lengths and token counts.
#include "trainer/data/training_batch.h"

#include <vector>

#include <gtest/gtest.h>

#include "tests/trainer_data/test_support.h"

namespace xlate::trainer {
namespace {

std::vector<int32_t> row_of(const Tensor& tensor, int64_t row) {
  const int64_t width = tensor.dim(1);
  const int32_t* begin = tensor.data<int32_t>() + row * width;
  return std::vector<int32_t>(begin, begin + width);
}

std::vector<int32_t> padded(std::vector<int32_t> values, int64_t width, int32_t pad) {
  values.resize(static_cast<size_t>(width), pad);
  return values;
}

TEST(TrainingBatch, PlacesStartAndEosAndPadsEveryRow) {
  absl::StatusOr<TokenCorpus> corpus = TokenCorpus::Open(testing::shared_corpus_dir(), "train");
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  // Three pairs of different lengths, the longest target not in the longest-source row.
  const std::vector<int64_t> pairs = {5, 0, 17};
  ModelConfig ids;  // pad 0, eos 3, decoder start = bos 2
  ids.decoder_start_id = 2;
  const TrainingBatch batch = make_training_batch(*corpus, pairs, ids);

  int64_t S = 0, T = 0, source_tokens = 0, target_tokens = 0;
  for (int64_t pair : pairs) {
    S = std::max(S, corpus->source_length(pair));
    T = std::max(T, corpus->target_length(pair) + 1);
    source_tokens += corpus->source_length(pair);
    target_tokens += corpus->target_length(pair) + 1;
  }
  ASSERT_EQ(batch.source_tokens.shape(), (std::vector<int64_t>{3, S}));
  ASSERT_EQ(batch.target_input.shape(), (std::vector<int64_t>{3, T}));
  ASSERT_EQ(batch.target_output.shape(), (std::vector<int64_t>{3, T}));
  ASSERT_EQ(batch.source_lengths.shape(), (std::vector<int64_t>{3}));
  ASSERT_EQ(batch.target_lengths.shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(batch.source_tokens.dtype(), DType::kInt32);
  EXPECT_EQ(batch.source_token_count, source_tokens);
  EXPECT_EQ(batch.target_token_count, target_tokens);

  for (int64_t row = 0; row < 3; ++row) {
    const TokenSpan source = corpus->source(pairs[row]), target = corpus->target(pairs[row]);
    const std::vector<int32_t> x(source.begin(), source.end()), y(target.begin(), target.end());
    ASSERT_EQ(x.back(), ids.eos_id);
    std::vector<int32_t> input = {ids.decoder_start_id};
    input.insert(input.end(), y.begin(), y.end());
    std::vector<int32_t> output = y;
    output.push_back(ids.eos_id);
    EXPECT_EQ(row_of(batch.source_tokens, row), padded(x, S, ids.pad_id)) << row;
    EXPECT_EQ(row_of(batch.target_input, row), padded(input, T, ids.pad_id)) << row;
    EXPECT_EQ(row_of(batch.target_output, row), padded(output, T, ids.pad_id)) << row;
    EXPECT_EQ(batch.source_lengths.data<int32_t>()[row], static_cast<int32_t>(x.size()));
    EXPECT_EQ(batch.target_lengths.data<int32_t>()[row], static_cast<int32_t>(y.size() + 1));
  }
}

TEST(TrainingBatch, UsesTheIdsOfTheConfig) {
  absl::StatusOr<TokenCorpus> corpus = TokenCorpus::Open(testing::shared_corpus_dir(), "train");
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  ModelConfig ids;
  ids.pad_id = 1, ids.decoder_start_id = 3, ids.eos_id = 2;
  const TrainingBatch batch = make_training_batch(*corpus, {0, 1}, ids);
  const int64_t T = batch.target_input.dim(1);
  const int64_t shorter = corpus->target_length(0) < corpus->target_length(1) ? 0 : 1;
  EXPECT_EQ(batch.target_input.data<int32_t>()[0], 3);
  EXPECT_EQ(batch.target_output.data<int32_t>()[shorter * T + corpus->target_length(shorter)], 2);
  EXPECT_EQ(batch.target_output.data<int32_t>()[shorter * T + T - 1], 1);
}

TEST(TrainingBatch, EmptyPairListGivesEmptyTensors) {
  absl::StatusOr<TokenCorpus> corpus = TokenCorpus::Open(testing::shared_corpus_dir(), "train");
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  const TrainingBatch batch = make_training_batch(*corpus, {}, ModelConfig());
  EXPECT_EQ(batch.source_tokens.shape(), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(batch.target_lengths.shape(), (std::vector<int64_t>{0}));
  EXPECT_EQ(batch.target_token_count, 0);
}

TEST(TrainingBatch, OutOfRangePairThrows) {
  absl::StatusOr<TokenCorpus> corpus = TokenCorpus::Open(testing::shared_corpus_dir(), "train");
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  EXPECT_THROW(make_training_batch(*corpus, {corpus->size()}, ModelConfig()), std::out_of_range);
}

}  // namespace
}  // namespace xlate::trainer
