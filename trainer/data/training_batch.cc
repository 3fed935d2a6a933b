#include "trainer/data/training_batch.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace xlate::trainer {
namespace {

void check_pair(const TokenCorpus& corpus, int64_t pair) {
  if (pair < 0 || pair >= corpus.size()) {
    throw std::out_of_range("pair " + std::to_string(pair) + " is outside the corpus of " +
                            std::to_string(corpus.size()) + " pairs");
  }
}

// An int32 [rows, columns] tensor filled with `value`.
Tensor filled(int64_t rows, int64_t columns, int32_t value) {
  Tensor tensor = Tensor::empty({rows, columns}, DType::kInt32);
  std::fill_n(tensor.data<int32_t>(), tensor.numel(), value);
  return tensor;
}

}  // namespace

BatchTokenCounts count_batch_tokens(const TokenCorpus& corpus, const std::vector<int64_t>& pairs) {
  BatchTokenCounts counts;
  for (const int64_t pair : pairs) {
    check_pair(corpus, pair);
    const int64_t source = corpus.source_length(pair), target = corpus.target_length(pair) + 1;
    ++counts.rows;
    counts.source_tokens += source;
    counts.target_tokens += target;
    counts.longest_source = std::max(counts.longest_source, source);
    counts.longest_target = std::max(counts.longest_target, target);
  }
  return counts;
}

TrainingBatch make_training_batch(const TokenCorpus& corpus, const std::vector<int64_t>& pairs,
                                  const ModelConfig& ids) {
  const BatchTokenCounts counts = count_batch_tokens(corpus, pairs);
  const int64_t rows = counts.rows, S = counts.longest_source, T = counts.longest_target;
  TrainingBatch batch;
  batch.source_tokens = filled(rows, S, ids.pad_id);
  batch.target_input = filled(rows, T, ids.pad_id);
  batch.target_output = filled(rows, T, ids.pad_id);
  batch.source_lengths = Tensor::empty({rows}, DType::kInt32);
  batch.target_lengths = Tensor::empty({rows}, DType::kInt32);
  batch.source_token_count = counts.source_tokens;
  batch.target_token_count = counts.target_tokens;
  for (int64_t row = 0; row < rows; ++row) {
    const TokenSpan source = corpus.source(pairs[row]);
    const TokenSpan target = corpus.target(pairs[row]);
    std::copy(source.begin(), source.end(), batch.source_tokens.data<int32_t>() + row * S);
    int32_t* input = batch.target_input.data<int32_t>() + row * T;    // [T]
    int32_t* output = batch.target_output.data<int32_t>() + row * T;  // [T]
    input[0] = ids.decoder_start_id;
    std::copy(target.begin(), target.end(), input + 1);
    std::copy(target.begin(), target.end(), output);
    output[target.size] = ids.eos_id;
    batch.source_lengths.data<int32_t>()[row] = static_cast<int32_t>(source.size);
    batch.target_lengths.data<int32_t>()[row] = static_cast<int32_t>(target.size + 1);
  }
  return batch;
}

}  // namespace xlate::trainer
