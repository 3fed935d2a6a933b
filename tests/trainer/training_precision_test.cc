// Which precision `--precision` trains in on which device, and the refusals that name the
// compute capability (resolve_training_precision is a function of the GPU's capability, so every
// GPU generation's rule is checked here without one), and the models a device's backend cannot
// run, refused at start (the backend's limits are in its table, readable without a GPU).
#include <gtest/gtest.h>

#include "engine/ops/backend.h"
#include "trainer/training/training_options.h"

namespace xlate::trainer {
namespace {

TrainingPrecision resolved(const std::string& precision, Device device, int capability) {
  absl::StatusOr<TrainingPrecision> result =
      resolve_training_precision(precision, device, capability);
  EXPECT_TRUE(result.ok()) << precision << " at " << capability << ": " << result.status();
  return result.ok() ? *result : TrainingPrecision::kFloat32;
}

std::string refusal(const std::string& precision, Device device, int capability) {
  absl::StatusOr<TrainingPrecision> result =
      resolve_training_precision(precision, device, capability);
  EXPECT_FALSE(result.ok()) << precision << " at " << capability;
  return std::string(result.status().message());
}

TEST(TrainingPrecision, AutoPicksWhatEachGpuGenerationRunsFastest) {
  EXPECT_EQ(resolved("auto", Device::kCPU, 0), TrainingPrecision::kFloat32);
  // P100: no tensor cores, but fp16 halves the stored activations (--activations auto).
  EXPECT_EQ(resolved("auto", Device::kCUDA, 60), TrainingPrecision::kFloat16);
  EXPECT_EQ(resolved("auto", Device::kCUDA, 61), TrainingPrecision::kFloat16);  // P40, GTX 10x0
  EXPECT_EQ(resolved("auto", Device::kCUDA, 52), TrainingPrecision::kFloat32);  // Maxwell
  EXPECT_EQ(resolved("auto", Device::kCUDA, 70), TrainingPrecision::kFloat16);  // V100
  EXPECT_EQ(resolved("auto", Device::kCUDA, 75), TrainingPrecision::kFloat16);  // T4
  EXPECT_EQ(resolved("auto", Device::kCUDA, 80), TrainingPrecision::kBFloat16); // A100
  EXPECT_EQ(resolved("auto", Device::kCUDA, 90), TrainingPrecision::kBFloat16); // H100
  EXPECT_EQ(resolved("fp32", Device::kCUDA, 90), TrainingPrecision::kFloat32);
  EXPECT_EQ(resolved("fp16", Device::kCUDA, 90), TrainingPrecision::kFloat16);
  EXPECT_EQ(resolved("bf16", Device::kCUDA, 80), TrainingPrecision::kBFloat16);
  // The CPU runs the GPU's 16-bit numerics when asked, whatever the capability argument says.
  EXPECT_EQ(resolved("bf16", Device::kCPU, 0), TrainingPrecision::kBFloat16);
  EXPECT_EQ(resolved("fp16", Device::kCPU, 0), TrainingPrecision::kFloat16);
  // P100-class GPUs run fp16 when asked (products of float16 copies, no tensor cores).
  EXPECT_EQ(resolved("fp16", Device::kCUDA, 60), TrainingPrecision::kFloat16);
  EXPECT_EQ(resolved("fp16", Device::kCUDA, 61), TrainingPrecision::kFloat16);
}

TEST(TrainingPrecision, WhatTheDeviceCannotRunIsRefusedNamingIt) {
  EXPECT_EQ(refusal("bf16", Device::kCUDA, 75),
            "--precision bf16 needs compute capability 8.0 or newer (Ampere); this GPU has 7.5: "
            "use --precision fp16");
  EXPECT_EQ(refusal("bf16", Device::kCUDA, 61),
            "--precision bf16 needs compute capability 8.0 or newer (Ampere); this GPU has 6.1: "
            "use --precision fp32");
}

// --activations 16bit stores them in the precision's 16-bit type, on a GPU and on the CPU;
// auto (the default) does under fp16 and bf16 and keeps float32 under fp32 without refusing.
TEST(TrainingPrecision, SixteenBitActivationsTakeThePrecisionsType) {
  const auto dtype = [](const std::string& activations, Device device,
                        TrainingPrecision precision) {
    absl::StatusOr<DType> result = resolve_activation_dtype(activations, device, precision);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : DType::kInt32;
  };
  EXPECT_EQ(dtype("fp32", Device::kCUDA, TrainingPrecision::kBFloat16), DType::kFloat32);
  EXPECT_EQ(dtype("16bit", Device::kCUDA, TrainingPrecision::kFloat16), DType::kFloat16);
  EXPECT_EQ(dtype("16bit", Device::kCUDA, TrainingPrecision::kBFloat16), DType::kBFloat16);
  EXPECT_EQ(dtype("auto", Device::kCUDA, TrainingPrecision::kFloat16), DType::kFloat16);
  EXPECT_EQ(dtype("auto", Device::kCUDA, TrainingPrecision::kBFloat16), DType::kBFloat16);
  EXPECT_EQ(dtype("auto", Device::kCUDA, TrainingPrecision::kFloat32), DType::kFloat32);
  EXPECT_EQ(dtype("auto", Device::kCPU, TrainingPrecision::kFloat32), DType::kFloat32);
  EXPECT_EQ(dtype("auto", Device::kCPU, TrainingPrecision::kBFloat16), DType::kBFloat16);
  EXPECT_EQ(dtype("16bit", Device::kCPU, TrainingPrecision::kFloat16), DType::kFloat16);
  EXPECT_EQ(dtype("fp32", Device::kCPU, TrainingPrecision::kBFloat16), DType::kFloat32);
  for (const auto& [device, precision] :
       {std::pair{Device::kCPU, TrainingPrecision::kFloat32},
        std::pair{Device::kCUDA, TrainingPrecision::kFloat32}}) {
    const absl::StatusOr<DType> refused = resolve_activation_dtype("16bit", device, precision);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(std::string(refused.status().message())
                  .find("--activations 16bit needs --precision fp16 or bf16"),
              std::string::npos)
        << refused.status();
  }
}

TEST(TrainingPrecision, LossScalingFollowsThePrecisionUnlessChosen) {
  EXPECT_EQ(resolve_loss_scale("auto", TrainingPrecision::kFloat16), "dynamic");
  EXPECT_EQ(resolve_loss_scale("auto", TrainingPrecision::kBFloat16), "none");
  EXPECT_EQ(resolve_loss_scale("auto", TrainingPrecision::kFloat32), "none");
  EXPECT_EQ(resolve_loss_scale("none", TrainingPrecision::kFloat16), "none");
  EXPECT_EQ(resolve_loss_scale("dynamic", TrainingPrecision::kFloat32), "dynamic");
  EXPECT_STREQ(precision_name(TrainingPrecision::kBFloat16), "bf16");
}

// Table 3's row (A) with h = 1: d_k = d_v = 512, wider than the CUDA attention kernel's heads.
// Without this check the GPU run started and threw from the kernel's launcher at the first step.
TEST(TrainingDevice, HeadsWiderThanTheGpuAttentionTakesAreRefusedAtStart) {
  if (find_op_backend(Device::kCUDA) == nullptr) GTEST_SKIP() << "a build without CUDA";
  ArchitectureOptions architecture;
  architecture.heads = 1;
  absl::StatusOr<ModelConfig> one_head = build_model_config(architecture, 1000);
  ASSERT_TRUE(one_head.ok()) << one_head.status();
  EXPECT_TRUE(check_model_fits_device(*one_head, Device::kCPU).ok());
  const absl::Status refused = check_model_fits_device(*one_head, Device::kCUDA);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.message(),
            "the encoder's attention heads are 512 (d_k) and 512 (d_v) wide; the CUDA backend's "
            "attention takes at most 256: raise --heads, lower --d_k / --d_v, or train with "
            "--device cpu");

  architecture.heads = 2;  // 256 each: the widest the kernel takes
  absl::StatusOr<ModelConfig> two_heads = build_model_config(architecture, 1000);
  ASSERT_TRUE(two_heads.ok()) << two_heads.status();
  EXPECT_TRUE(check_model_fits_device(*two_heads, Device::kCUDA).ok());
  architecture.d_v = 320;  // d_v alone too wide
  absl::StatusOr<ModelConfig> wide_values = build_model_config(architecture, 1000);
  ASSERT_TRUE(wide_values.ok()) << wide_values.status();
  EXPECT_FALSE(check_model_fits_device(*wide_values, Device::kCUDA).ok());
}

}  // namespace
}  // namespace xlate::trainer
