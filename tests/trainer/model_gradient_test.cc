// The whole training model's gradient against finite differences on a tiny configuration,
// every parameter tensor sampled, with dropout on (its masks are a function of the key, so the
// perturbed forward passes see the same masks) and label smoothing.
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "engine/model_directory.h"
#include "tests/trainer/gradient_check.h"
#include "trainer/model/flat_parameters.h"
#include "trainer/model/transformer_training.h"

namespace xlate::trainer {
namespace {

// `pre_norm`: x + Sublayer(LN(x)) with a final norm after each stack (--norm_position pre).
ModelConfig tiny_config(PositionalEncoding positional, bool pre_norm = false) {
  ModelConfig config;
  config.pre_norm = pre_norm;
  config.vocab_size = 11;
  config.d_model = 8;
  config.encoder_layers = config.decoder_layers = 2;
  config.encoder_heads = config.decoder_heads = 2;
  config.encoder_ffn_dim = config.decoder_ffn_dim = 12;
  config.max_positions = 16;
  config.label_smoothing = 0.1f;
  config.positional = positional;
  return config;
}

// Two sentence pairs, the second shorter on both sides (padding in both stacks).
ModelInputs tiny_batch() {
  ModelInputs inputs;
  inputs.source_tokens = Tensor::from_vector(std::vector<int32_t>{5, 6, 7, 3, 8, 3, 0, 0}, {2, 4});
  inputs.source_lengths = Tensor::from_vector(std::vector<int32_t>{4, 2}, {2});
  inputs.target_input = Tensor::from_vector(std::vector<int32_t>{2, 9, 4, 2, 10, 0}, {2, 3});
  inputs.target_output = Tensor::from_vector(std::vector<int32_t>{9, 4, 3, 10, 3, 0}, {2, 3});
  inputs.target_lengths = Tensor::from_vector(std::vector<int32_t>{3, 2}, {2});
  return inputs;
}

// Residual and activation dropout at 0.1 under `seed`.
DropoutSettings dropout_of(uint64_t seed) {
  DropoutSettings dropout;
  dropout.residual = 0.1f;
  dropout.activation = 0.1f;
  dropout.seed = seed;
  return dropout;
}

// Both positional encodings, post-norm and pre-norm.
class ModelGradientTest
    : public ::testing::TestWithParam<std::tuple<PositionalEncoding, bool>> {
 protected:
  static ModelConfig config() {
    return tiny_config(std::get<0>(GetParam()), std::get<1>(GetParam()));
  }
};

TEST_P(ModelGradientTest, EveryParameterMatchesFiniteDifferences) {
  const ModelConfig config = ModelGradientTest::config();
  FlatParameters parameters(config), gradients(config);
  parameters.copy_from(random_weights(config, 17), config);
  const ModelInputs inputs = tiny_batch();
  const DropoutSettings dropout = dropout_of(5);
  TransformerTraining model(config);
  auto loss = [&] { return model.forward(parameters.weights(), inputs, dropout).read().loss; };
  const CrossEntropySums sums = model.forward(parameters.weights(), inputs, dropout).read();
  EXPECT_EQ(sums.tokens, 5);
  model.backward(gradients.weights(), parameters.weights(), 1.f);

  for (const ParameterSlice& slice : parameters.slices()) {
    Tensor values = parameters.flat().view(slice.offset, {slice.count});
    Tensor analytic = gradients.flat().view(slice.offset, {slice.count});
    if (!slice.trainable) {
      for (int64_t i = 0; i < slice.count; ++i) ASSERT_EQ(analytic.data<float>()[i], 0.f);
      continue;
    }
    testing::GradientCheck check;
    check.samples = 6;
    check.step = 1e-3f;
    check.absolute = 3e-3;
    testing::expect_gradient_matches(loss, values, analytic, slice.name, check);
  }
}

// The training step's pass (the loss's gradient taken in the forward's pass over the logits)
// gives the sums and the gradients of forward() then backward() to the bit; on a listener it
// reports the same tensors in the same order.
TEST_P(ModelGradientTest, ForwardBackwardIsForwardThenBackward) {
  const ModelConfig config = ModelGradientTest::config();
  FlatParameters parameters(config), separate(config), fused(config);
  parameters.copy_from(random_weights(config, 19), config);
  const ModelInputs inputs = tiny_batch();
  const DropoutSettings dropout = dropout_of(6);
  constexpr float kDloss = 128.f;  // a loss scale
  class Order final : public GradientListener {
   public:
    void tensor_ready(const Tensor& gradient) override { data.push_back(gradient.raw_data()); }
    std::vector<const void*> data;
  };
  Order separate_order, fused_order;
  TransformerTraining model(config);
  const CrossEntropySums expected = model.forward(parameters.weights(), inputs, dropout).read();
  model.backward(separate.weights(), parameters.weights(), kDloss, &separate_order);
  const CrossEntropySums sums = model
                                    .forward_backward(fused.weights(), parameters.weights(),
                                                      inputs, dropout, kDloss, &fused_order)
                                    .read();
  EXPECT_EQ(sums.loss, expected.loss);
  EXPECT_EQ(sums.nll, expected.nll);
  EXPECT_EQ(sums.tokens, expected.tokens);
  for (int64_t i = 0; i < separate.size(); ++i) {
    ASSERT_EQ(fused.flat().data<float>()[i], separate.flat().data<float>()[i]) << i;
  }
  ASSERT_EQ(fused_order.data.size(), separate_order.data.size());
  for (size_t t = 0; t < fused_order.data.size(); ++t) {
    EXPECT_EQ(static_cast<const char*>(fused_order.data[t]) -
                  static_cast<const char*>(fused.flat().raw_data()),
              static_cast<const char*>(separate_order.data[t]) -
                  static_cast<const char*>(separate.flat().raw_data()))
        << "tensor " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, ModelGradientTest,
    ::testing::Combine(::testing::Values(PositionalEncoding::kSinusoidal,
                                         PositionalEncoding::kLearned),
                       ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<PositionalEncoding, bool>>& info) {
      return std::string(std::get<0>(info.param) == PositionalEncoding::kLearned ? "Learned"
                                                                                 : "Sinusoidal") +
             (std::get<1>(info.param) ? "PreNorm" : "PostNorm");
    });

TEST(TransformerTraining, PaddedPositionsDoNotChangeTheLoss) {
  const ModelConfig config = tiny_config(PositionalEncoding::kSinusoidal);
  FlatParameters parameters(config);
  parameters.copy_from(random_weights(config, 3), config);
  TransformerTraining model(config);
  ModelInputs inputs = tiny_batch();
  const double clean = model.forward(parameters.weights(), inputs, {}).read().loss;
  inputs.source_tokens.data<int32_t>()[6] = 9;  // padding of sentence 2
  inputs.target_input.data<int32_t>()[5] = 7;
  EXPECT_DOUBLE_EQ(model.forward(parameters.weights(), inputs, {}).read().loss, clean);
}

// The weights the passes read under --activations 16bit: a copy of the master in another dtype
// (float32 here, the CPU's only one), laid out as the master, made again by refresh().
TEST(TransformerTraining, AParameterCopyFollowsTheMasterAfterRefresh) {
  const ModelConfig config = tiny_config(PositionalEncoding::kLearned);
  FlatParameters master(config);
  master.copy_from(random_weights(config, 5), config);
  ParameterCopy copy(master, DType::kFloat32);
  ASSERT_EQ(copy.flat().numel(), master.size());
  EXPECT_EQ(copy.weights().shared_embedding.shape(), master.weights().shared_embedding.shape());
  EXPECT_EQ(copy.flat().data<float>()[7], master.flat().data<float>()[7]);
  master.flat().data<float>()[7] += 1.f;  // an update
  EXPECT_NE(copy.flat().data<float>()[7], master.flat().data<float>()[7]);
  copy.refresh(master);
  EXPECT_EQ(copy.flat().data<float>()[7], master.flat().data<float>()[7]);
  // The passes on the copy give the master's loss and gradients.
  TransformerTraining model(config);
  const ModelInputs inputs = tiny_batch();
  const double on_master = model.forward(master.weights(), inputs, {}).read().loss;
  EXPECT_EQ(model.forward(copy.weights(), inputs, {}).read().loss, on_master);
}

TEST(TransformerTraining, GradientsAccumulateOverCalls) {
  const ModelConfig config = tiny_config(PositionalEncoding::kSinusoidal);
  FlatParameters parameters(config), once(config), twice(config);
  parameters.copy_from(random_weights(config, 4), config);
  TransformerTraining model(config);
  const ModelInputs inputs = tiny_batch();
  model.forward(parameters.weights(), inputs, {});
  model.backward(once.weights(), parameters.weights(), 1.f);
  for (int i = 0; i < 2; ++i) {
    model.forward(parameters.weights(), inputs, {});
    model.backward(twice.weights(), parameters.weights(), 1.f);
  }
  for (int64_t i = 0; i < once.size(); ++i) {
    ASSERT_NEAR(twice.flat().data<float>()[i], 2 * once.flat().data<float>()[i],
                1e-5 + 1e-5 * std::fabs(once.flat().data<float>()[i]));
  }
}

// The trainer drops the activations between steps and after validation: a backward pass after
// that, or a second one after one forward, is refused (the backward consumed the logits).
TEST(TransformerTraining, ReleasedActivationsLeaveNothingToGoBackThrough) {
  const ModelConfig config = tiny_config(PositionalEncoding::kSinusoidal);
  FlatParameters parameters(config), gradients(config);
  parameters.copy_from(random_weights(config, 4), config);
  TransformerTraining model(config);
  const ModelInputs inputs = tiny_batch();
  model.forward(parameters.weights(), inputs, {});
  model.release_activations();
  EXPECT_THROW(model.backward(gradients.weights(), parameters.weights(), 1.f), std::logic_error);
  model.forward(parameters.weights(), inputs, {});
  model.backward(gradients.weights(), parameters.weights(), 1.f);
  EXPECT_THROW(model.backward(gradients.weights(), parameters.weights(), 1.f), std::logic_error);
}

// Keeps a copy of every gradient tensor at the moment the backward pass reports it final.
class SnapshotListener final : public GradientListener {
 public:
  explicit SnapshotListener(const float* flat) : flat_(flat) {}
  void tensor_ready(const Tensor& gradient) override {
    const int64_t offset = gradient.data<float>() - flat_;
    ++reports[offset];
    const float* values = gradient.data<float>();
    snapshots[offset].assign(values, values + gradient.numel());
    order.push_back(offset);
  }
  std::map<int64_t, int> reports;                   // by offset in the flat buffer
  std::map<int64_t, std::vector<float>> snapshots;  // by offset
  std::vector<int64_t> order;

 private:
  const float* flat_;
};

// Data-parallel training all-reduces a gradient as soon as backward() reports it, while the pass
// goes on: a report before the pass's last write to that tensor would reduce a partial sum.
TEST_P(ModelGradientTest, ReportsEveryGradientOnceAndOnlyWhenFinal) {
  const ModelConfig config = ModelGradientTest::config();
  FlatParameters parameters(config), gradients(config);
  parameters.copy_from(random_weights(config, 23), config);
  TransformerTraining model(config);
  model.forward(parameters.weights(), tiny_batch(), {});
  SnapshotListener listener(gradients.flat().data<float>());
  model.backward(gradients.weights(), parameters.weights(), 1.f, &listener);

  for (const ParameterSlice& slice : gradients.slices()) {
    if (!slice.trainable) {
      EXPECT_EQ(listener.reports.count(slice.offset), 0u) << slice.name << " has no gradient";
      continue;
    }
    ASSERT_EQ(listener.reports[slice.offset], 1) << slice.name;
    const std::vector<float>& snapshot = listener.snapshots[slice.offset];
    ASSERT_EQ(static_cast<int64_t>(snapshot.size()), slice.count) << slice.name;
    const float* final_values = gradients.flat().data<float>() + slice.offset;
    for (int64_t i = 0; i < slice.count; ++i) {
      ASSERT_EQ(snapshot[static_cast<size_t>(i)], final_values[i])
          << slice.name << "[" << i << "] changed after it was reported final";
    }
  }
  // The shared embedding (also the output projection) is finished only by the source
  // embedding's backward, the very last thing the pass does.
  EXPECT_EQ(listener.order.back(), gradients.slices().front().offset);
}

}  // namespace
}  // namespace xlate::trainer
