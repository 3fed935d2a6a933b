// The training model on the GPU against the CPU reference: the same weights and batch (padding
// on both sides, dropout on, both positional encodings) give the same loss and every gradient
// tensor, a second GPU pass repeats the first bit for bit, and an Adam step on the GPU moves the
// weights as the CPU's does. Skipped (GTEST_SKIP) on a machine without a GPU.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

#include "tests/gpu_required.h"
#include "engine/backend/cuda_backend.h"
#include "engine/model_directory.h"
#include "trainer/model/flat_parameters.h"
#include "trainer/model/transformer_training.h"
#include "trainer/optim/adam.h"

namespace xlate::trainer {
namespace {

// Small, but wide enough for several warps per row and heads of 8 dimensions.
ModelConfig small_config(PositionalEncoding positional) {
  ModelConfig config;
  config.vocab_size = 67;
  config.d_model = 32;
  config.encoder_layers = config.decoder_layers = 2;
  config.encoder_heads = config.decoder_heads = 4;
  config.encoder_ffn_dim = config.decoder_ffn_dim = 48;
  config.max_positions = 32;
  config.label_smoothing = 0.1f;
  config.positional = positional;
  return config;
}

// Three sentence pairs of different lengths, padded (pad id 0) to the longest on each side.
ModelInputs random_batch(const ModelConfig& config, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> token(4, config.vocab_size - 1);
  const std::vector<int32_t> source_lengths{9, 4, 7}, target_lengths{8, 3, 6};
  const int64_t n = 3, s = 9, t = 8;
  std::vector<int32_t> source(n * s, 0), input(n * t, 0), output(n * t, 0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < source_lengths[i]; ++j) source[i * s + j] = token(rng);
    input[i * t] = config.decoder_start_id;
    for (int64_t j = 0; j < target_lengths[i]; ++j) {
      const int32_t next = j + 1 == target_lengths[i] ? config.eos_id : token(rng);
      output[i * t + j] = next;
      if (j + 1 < target_lengths[i]) input[i * t + j + 1] = next;
    }
  }
  return {Tensor::from_vector(source, {n, s}), Tensor::from_vector(source_lengths, {n}),
          Tensor::from_vector(input, {n, t}), Tensor::from_vector(output, {n, t}),
          Tensor::from_vector(target_lengths, {n})};
}

ModelInputs to_gpu(const ModelInputs& host) {
  return {host.source_tokens.to(Device::kCUDA), host.source_lengths.to(Device::kCUDA),
          host.target_input.to(Device::kCUDA), host.target_output.to(Device::kCUDA),
          host.target_lengths.to(Device::kCUDA)};
}

std::vector<float> values(const Tensor& tensor) {
  const Tensor host = tensor.to(Device::kCPU);
  return std::vector<float>(host.data<float>(), host.data<float>() + host.numel());
}

float largest_magnitude(const std::vector<float>& flat, const ParameterSlice& slice) {
  float largest = 0.f;
  for (int64_t i = slice.offset; i < slice.offset + slice.count; ++i) {
    largest = std::max(largest, std::fabs(flat[i]));
  }
  return largest;
}

// Each parameter's slice of `gpu` within `relative` of the largest magnitude of its CPU slice.
// With `zero_key_bias_gradients` (gradients, not weights), a key projection's bias is held to
// zero instead: softmax is unchanged by adding q·b_k to a whole row of scores, so its gradient
// (the column sums of dK, whose rows sum to zero) is 0 in exact arithmetic, and both devices
// give rounding noise (~1e-7 against O(1) neighbours) that no relative bound can compare. Both
// must stay below 1e-5 of the largest gradient of the projection's weight.
void expect_slices_near(const FlatParameters& cpu, const FlatParameters& gpu, double relative,
                        const char* what, bool zero_key_bias_gradients = false) {
  const std::vector<float> expected = values(cpu.flat()), actual = values(gpu.flat());
  const std::vector<ParameterSlice>& slices = cpu.slices();
  for (const ParameterSlice& slice : slices) {
    if (zero_key_bias_gradients && absl::EndsWith(slice.name, "k_proj.bias")) {
      const std::string weight_name =
          absl::StrCat(absl::StripSuffix(slice.name, "bias"), "weight");
      const auto weight =
          std::find_if(slices.begin(), slices.end(),
                       [&](const ParameterSlice& other) { return other.name == weight_name; });
      ASSERT_NE(weight, slices.end()) << weight_name;
      const float bound = 1e-5f * largest_magnitude(expected, *weight);
      EXPECT_LE(largest_magnitude(expected, slice), bound) << what << " " << slice.name << " (CPU)";
      EXPECT_LE(largest_magnitude(actual, slice), bound) << what << " " << slice.name << " (GPU)";
      continue;
    }
    const float largest = largest_magnitude(expected, slice);
    float worst = 0.f;
    for (int64_t i = slice.offset; i < slice.offset + slice.count; ++i) {
      worst = std::max(worst, std::fabs(actual[i] - expected[i]));
    }
    EXPECT_LE(worst, relative * std::max(largest, 1e-6f))
        << what << " " << slice.name << ": largest |cpu| " << largest;
  }
}

// One model's parameters and gradients on the CPU and on the GPU, the parameters equal.
struct OnBothDevices {
  OnBothDevices(const ModelConfig& config, uint64_t seed)
      : cpu_parameters(config), cpu_gradients(config),
        gpu_parameters(config, Device::kCUDA), gpu_gradients(config, Device::kCUDA) {
    const TransformerWeights initial = random_weights(config, seed);
    cpu_parameters.copy_from(initial, config);
    gpu_parameters.copy_from(initial, config);
  }
  FlatParameters cpu_parameters, cpu_gradients, gpu_parameters, gpu_gradients;
};

DropoutSettings training_dropout() {
  DropoutSettings dropout;
  dropout.residual = 0.1f;
  dropout.activation = 0.1f;
  dropout.seed = 11;
  dropout.step = 3;
  return dropout;
}

class ModelCudaTest : public ::testing::TestWithParam<PositionalEncoding> {
 protected:
  void SetUp() override {
    XLATE_SKIP_WITHOUT_GPU();
  }
};

TEST_P(ModelCudaTest, LossAndEveryGradientEqualTheCpu) {
  const ModelConfig config = small_config(GetParam());
  OnBothDevices m(config, 29);
  const ModelInputs batch = random_batch(config, 5);

  TransformerTraining cpu_model(config), gpu_model(config);
  const CrossEntropySums cpu =
      cpu_model.forward(m.cpu_parameters.weights(), batch, training_dropout()).read();
  PendingCrossEntropySums gpu_pending =
      gpu_model.forward(m.gpu_parameters.weights(), to_gpu(batch), training_dropout());
  cpu_model.backward(m.cpu_gradients.weights(), m.cpu_parameters.weights(), 1.f);
  gpu_model.backward(m.gpu_gradients.weights(), m.gpu_parameters.weights(), 1.f);
  // Read after the backward pass, as the trainer does (it overwrites the log-probabilities).
  const CrossEntropySums gpu = gpu_pending.read();
  EXPECT_EQ(gpu.tokens, cpu.tokens);
  EXPECT_EQ(cpu.tokens, 8 + 3 + 6);
  EXPECT_NEAR(gpu.loss, cpu.loss, 1e-5 * cpu.loss);
  EXPECT_NEAR(gpu.nll, cpu.nll, 1e-5 * cpu.nll);
  expect_slices_near(m.cpu_gradients, m.gpu_gradients, 2e-4, "gradient",
                     /*zero_key_bias_gradients=*/true);

  // Deterministic kernels: the same pass again gives the same bits.
  FlatParameters again(config, Device::kCUDA);
  gpu_model.forward(m.gpu_parameters.weights(), to_gpu(batch), training_dropout());
  gpu_model.backward(again.weights(), m.gpu_parameters.weights(), 1.f);
  EXPECT_EQ(values(again.flat()), values(m.gpu_gradients.flat()));

  // The training step's pass, the loss's gradient taken in the forward (the fused kernel), is
  // the two passes above to the bit: the same log-probabilities, the same gradient formula.
  FlatParameters fused(config, Device::kCUDA);
  const CrossEntropySums fused_sums =
      gpu_model
          .forward_backward(fused.weights(), m.gpu_parameters.weights(), to_gpu(batch),
                            training_dropout(), 1.f)
          .read();
  EXPECT_EQ(fused_sums.loss, gpu.loss);
  EXPECT_EQ(fused_sums.tokens, gpu.tokens);
  EXPECT_EQ(values(fused.flat()), values(m.gpu_gradients.flat()));
}

TEST_P(ModelCudaTest, AdamStepMovesTheWeightsAsOnTheCpu) {
  const ModelConfig config = small_config(GetParam());
  OnBothDevices m(config, 31);
  TransformerTraining model(config);
  model.forward(m.cpu_parameters.weights(), random_batch(config, 7), training_dropout());
  model.backward(m.cpu_gradients.weights(), m.cpu_parameters.weights(), 1.f);
  m.gpu_gradients.flat().copy_from(m.cpu_gradients.flat());

  const AdamOptions options{0.9, 0.98, 1e-9, /*clip_norm=*/0.5};
  Adam cpu_adam(m.cpu_parameters, options), gpu_adam(m.gpu_parameters, options);
  for (int step = 0; step < 3; ++step) {
    // 1/17: the trainer's 1 / target tokens, folded into the update.
    const double cpu_norm = Adam::gradient_norm(m.cpu_gradients, 1.0 / 17);
    const double gpu_norm = Adam::gradient_norm(m.gpu_gradients, 1.0 / 17);
    cpu_adam.update(m.cpu_parameters, m.cpu_gradients, 1e-3, 1.0 / 17, cpu_norm);
    gpu_adam.update(m.gpu_parameters, m.gpu_gradients, 1e-3, 1.0 / 17, gpu_norm);
    EXPECT_NEAR(gpu_norm, cpu_norm, 1e-6 * cpu_norm);
  }
  expect_slices_near(m.cpu_parameters, m.gpu_parameters, 1e-5, "weights after Adam");
  EXPECT_EQ(gpu_adam.device(), Device::kCUDA);
  const AdamMoments cpu_moments = cpu_adam.moments(), gpu_moments = gpu_adam.moments();
  const float* cpu_m = cpu_moments.second.data<float>();
  const float* gpu_m = gpu_moments.second.data<float>();
  for (int64_t i = 0; i < cpu_moments.second.numel(); ++i) {
    ASSERT_NEAR(gpu_m[i], cpu_m[i], 1e-5f * std::abs(cpu_m[i]) + 1e-12f) << "v at " << i;
  }
}

// The L2 norm of `flat`'s values in `slice`.
double slice_norm(const std::vector<float>& flat, const ParameterSlice& slice) {
  double sum = 0;
  for (int64_t i = slice.offset; i < slice.offset + slice.count; ++i) {
    sum += static_cast<double>(flat[i]) * flat[i];
  }
  return std::sqrt(sum);
}

// The L2 norm of `a` - `b` in `slice`.
double slice_distance(const std::vector<float>& a, const std::vector<float>& b,
                      const ParameterSlice& slice) {
  double sum = 0;
  for (int64_t i = slice.offset; i < slice.offset + slice.count; ++i) {
    const double difference = static_cast<double>(a[i]) - b[i];
    sum += difference * difference;
  }
  return std::sqrt(sum);
}

// --activations 16bit: the passes on a 16-bit copy of the weights, every activation and its
// gradient in that type, the gradients float32. Against the CPU's float32 pass on the same
// rounded weights, so what differs is the rounding of each stored activation. Compared by each
// parameter's relative L2 distance, not element by element: a ReLU input within rounding of 0
// may take the other sign on one device (a few of the ~3,500 in bf16), which moves one term of
// a row's gradient by O(1) but the slice by ~2 %; a wrong kernel or a miswired buffer moves a
// slice by O(1). A key projection's bias gradient (0 in exact arithmetic, rounding noise on
// both devices) is held to the same share of its weight's gradient. bf16's bound is fp16's
// times the ratio of their unit roundoffs (2^-8 / 2^-11 = 8): on an H100 the query
// projection's gradient in the second encoder layer (learned positions) came 16.7 % from the
// CPU's, every slice within 3 % in fp16. The kernels are the same templates for both types.
TEST_P(ModelCudaTest, SixteenBitActivationsFollowTheCpu) {
  const ModelConfig config = small_config(GetParam());
  OnBothDevices m(config, 37);
  const ModelInputs batch = random_batch(config, 5);
  for (const auto& [storage, relative] : {std::pair{DType::kFloat16, 3e-2},
                                          std::pair{DType::kBFloat16, 8 * 3e-2}}) {
    const std::string what = dtype_name(storage);
    if (storage == DType::kBFloat16 && cuda_backend::compute_capability() < 80) continue;
    const ParameterCopy copy(m.gpu_parameters, storage);
    ASSERT_EQ(copy.weights().shared_embedding.dtype(), storage);

    FlatParameters rounded(config), expected_gradients(config);
    rounded.flat().copy_from(copy.flat().to(Device::kCPU).to_dtype(DType::kFloat32));
    TransformerTraining cpu_model(config);
    const CrossEntropySums cpu =
        cpu_model.forward(rounded.weights(), batch, training_dropout()).read();
    cpu_model.backward(expected_gradients.weights(), rounded.weights(), 1.f);
    const std::vector<float> expected = values(expected_gradients.flat());

    FlatParameters gradients(config, Device::kCUDA);
    TransformerTraining gpu_model(config);
    const CrossEntropySums gpu = gpu_model
                                     .forward_backward(gradients.weights(), copy.weights(),
                                                       to_gpu(batch), training_dropout(), 1.f)
                                     .read();
    EXPECT_EQ(gpu.tokens, cpu.tokens) << what;
    EXPECT_NEAR(gpu.loss, cpu.loss, relative / 10 * cpu.loss) << what;
    const std::vector<float> actual = values(gradients.flat());
    const std::vector<ParameterSlice>& slices = expected_gradients.slices();
    for (const ParameterSlice& slice : slices) {
      double scale = slice_norm(expected, slice);
      if (absl::EndsWith(slice.name, "k_proj.bias")) {
        const std::string weight = absl::StrCat(absl::StripSuffix(slice.name, "bias"), "weight");
        for (const ParameterSlice& other : slices) {
          if (other.name == weight) scale = slice_norm(expected, other);
        }
      }
      EXPECT_LE(slice_distance(actual, expected, slice), relative * std::max(scale, 1e-6))
          << what << " " << slice.name << ": |cpu| " << scale;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Positions, ModelCudaTest,
                         ::testing::Values(PositionalEncoding::kSinusoidal,
                                           PositionalEncoding::kLearned),
                         [](const ::testing::TestParamInfo<PositionalEncoding>& info) {
                           return info.param == PositionalEncoding::kLearned ? "Learned"
                                                                             : "Sinusoidal";
                         });

}  // namespace
}  // namespace xlate::trainer
