// The training forward (trainer/model/transformer_training.h) and the inference forward
// (engine/transformer.h: encode, then the teacher-forced decode) are wired apart; with dropout
// off they must compute the same function of the same weights. The inference forward is held
// to the independent golden reference (tests/model_test.cc), so this ties the training forward
// to it too: per target token, log P(reference) from the trainer's loss equals the one read off
// the engine's logits.
#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "engine/model_directory.h"
#include "engine/model_weights.h"
#include "engine/transformer.h"
#include "trainer/model/transformer_training.h"

namespace xlate::trainer {
namespace {

// The architecture the trainer trains (the paper's: post-norm, ReLU, shared embeddings; or
// pre-norm with a final norm after each stack).
ModelConfig small_config(PositionalEncoding positional, bool pre_norm) {
  ModelConfig config;
  config.pre_norm = pre_norm;
  config.vocab_size = 13;
  config.d_model = 16;
  config.encoder_layers = 2;
  config.decoder_layers = 3;
  config.encoder_heads = 4;
  config.decoder_heads = 2;
  config.encoder_ffn_dim = config.decoder_ffn_dim = 24;
  config.max_positions = 16;
  config.positional = positional;
  return config;
}

// Three sentence pairs of different lengths on both sides (padding in both stacks).
ModelInputs batch() {
  ModelInputs inputs;
  inputs.source_tokens = Tensor::from_vector(
      std::vector<int32_t>{5, 6, 7, 8, 3, 9, 3, 0, 0, 0, 11, 12, 4, 3, 0}, {3, 5});
  inputs.source_lengths = Tensor::from_vector(std::vector<int32_t>{5, 2, 4}, {3});
  inputs.target_input = Tensor::from_vector(
      std::vector<int32_t>{2, 9, 4, 10, 2, 10, 0, 0, 2, 5, 6, 0}, {3, 4});
  inputs.target_output = Tensor::from_vector(
      std::vector<int32_t>{9, 4, 10, 3, 10, 3, 0, 0, 5, 6, 3, 0}, {3, 4});
  inputs.target_lengths = Tensor::from_vector(std::vector<int32_t>{4, 2, 3}, {3});
  return inputs;
}

// Σ -log P(reference token) over the batch's target tokens, from the engine's logits [N, T, V].
double inference_nll(const TransformerModel& model, const ModelInputs& inputs) {
  const Tensor encoded = model.encode(inputs.source_tokens, inputs.source_lengths);
  const int64_t sentences = inputs.target_input.dim(0), steps = inputs.target_input.dim(1);
  DecoderState state = model.start_decoding(encoded, inputs.source_lengths, sentences, steps);
  const Tensor logits = model.decode(state, inputs.target_input);
  const int64_t vocabulary = logits.dim(2);
  double nll = 0;
  for (int64_t n = 0; n < sentences; ++n) {
    for (int64_t t = 0; t < inputs.target_lengths.data<int32_t>()[n]; ++t) {
      const float* row = logits.data<float>() + (n * steps + t) * vocabulary;
      double largest = row[0], total = 0;
      for (int64_t v = 1; v < vocabulary; ++v) largest = std::max(largest, double(row[v]));
      for (int64_t v = 0; v < vocabulary; ++v) total += std::exp(row[v] - largest);
      const int32_t reference = inputs.target_output.data<int32_t>()[n * steps + t];
      nll -= row[reference] - largest - std::log(total);
    }
  }
  return nll;
}

// Random weights whose layer norms differ from each other (random_weights starts them all at
// γ = 1, β = 0), so that a forward using one norm in another's place computes another function.
TransformerWeights weights_with_distinct_norms(const ModelConfig& config, uint64_t seed) {
  TransformerWeights weights = random_weights(config, seed);
  std::mt19937 generator(static_cast<uint32_t>(seed));
  std::uniform_real_distribution<float> gain(0.5f, 1.5f), bias(-0.3f, 0.3f);
  for (NamedParameter& parameter : named_parameters(weights, config)) {
    if (parameter.kind != ParameterKind::kNormGain && parameter.kind != ParameterKind::kNormBias) {
      continue;
    }
    float* values = parameter.tensor->data<float>();
    for (int64_t i = 0; i < parameter.tensor->numel(); ++i) {
      values[i] = parameter.kind == ParameterKind::kNormGain ? gain(generator) : bias(generator);
    }
  }
  return weights;
}

class OneForward : public ::testing::TestWithParam<std::tuple<PositionalEncoding, bool>> {};

TEST_P(OneForward, TrainingAndInferenceForwardsGiveTheSameLogProbabilities) {
  const ModelConfig config = small_config(std::get<0>(GetParam()), std::get<1>(GetParam()));
  for (uint64_t seed : {3u, 4u}) {
    const TransformerWeights weights = weights_with_distinct_norms(config, seed);
    const TransformerModel inference(config, weights);
    const ModelInputs inputs = batch();
    TransformerTraining training(config);
    const CrossEntropySums sums = training.forward(weights, inputs, DropoutSettings()).read();
    EXPECT_EQ(sums.tokens, 9);
    const double expected = inference_nll(inference, inputs);
    EXPECT_NEAR(sums.nll, expected, 1e-4 * std::max(1.0, std::fabs(expected)))
        << "seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, OneForward,
                         ::testing::Combine(::testing::Values(PositionalEncoding::kSinusoidal,
                                                              PositionalEncoding::kLearned),
                                            ::testing::Bool()));

}  // namespace
}  // namespace xlate::trainer
