// --device / --compute_type resolution on this machine (with or without a GPU).
#include "engine/placement_flags.h"

#include <gtest/gtest.h>

#include "engine/ops/backend.h"

namespace xlate {
namespace {

bool gpu_usable() { return device_count(Device::kCUDA) > 0; }

TEST(PlacementFlags, AutoPicksCudaInFloat16WhenUsableElseTheCpuWithALogLine) {
  auto resolved = resolve_placement("auto", "auto");
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  if (gpu_usable()) {
    EXPECT_EQ(resolved->placement.device, Device::kCUDA);
    EXPECT_EQ(resolved->placement.dtype, DType::kFloat16);
  } else {
    EXPECT_EQ(resolved->placement.device, Device::kCPU);
    EXPECT_EQ(resolved->placement.dtype, DType::kFloat32);
    EXPECT_NE(resolved->note.find("running on the CPU"), std::string::npos) << resolved->note;
  }
}

TEST(PlacementFlags, TheCpuKeepsItsActivationsInFloat32) {
  auto resolved = resolve_placement("cpu", "F32");
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ(resolved->placement.device, Device::kCPU);
  EXPECT_TRUE(resolved->note.empty());
  auto refused = resolve_placement("cpu", "float16");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("activations need --device cuda"), std::string::npos)
      << refused.status();
  // bfloat16 on the CPU: float32 activations, bfloat16 weights (where oneDNN has the products).
  auto bfloat16 = resolve_placement("cpu", "bf16");
  if (!bfloat16_weights_available(Device::kCPU).ok()) {
    ASSERT_FALSE(bfloat16.ok());
    EXPECT_NE(bfloat16.status().message().find("AVX-512"), std::string::npos);
    return;
  }
  ASSERT_TRUE(bfloat16.ok()) << bfloat16.status();
  EXPECT_EQ(bfloat16->placement.dtype, DType::kFloat32);
  EXPECT_EQ(bfloat16->placement.weights, DType::kBFloat16);
  EXPECT_EQ(compute_type_label(bfloat16->placement), "bfloat16");
}

TEST(PlacementFlags, UnknownNamesAreRefusedWithTheChoices) {
  auto device = resolve_placement("gpu", "auto");
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(device.status().message().find("auto, cpu or cuda"), std::string::npos);
  auto dtype = resolve_placement("cpu", "fp8");
  ASSERT_FALSE(dtype.ok());
  EXPECT_NE(dtype.status().message().find("float32, float16, bfloat16 or int8"),
            std::string::npos);
}

TEST(PlacementFlags, Int8IsFloat32ActivationsWithInt8WeightsOnTheCpuOnly) {
  auto resolved = resolve_placement("cpu", "int8");
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->placement.device, Device::kCPU);
  EXPECT_EQ(resolved->placement.dtype, DType::kFloat32);
  EXPECT_EQ(resolved->placement.weights, DType::kInt8);
  EXPECT_EQ(compute_type_label(resolved->placement), "int8");
  EXPECT_EQ(resolve_placement("cpu", "float32")->placement.weights, DType::kFloat32);
  // Refused on CUDA before anything looks for a GPU, so the message is the same everywhere.
  auto refused = resolve_placement("cuda", "int8");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("int8 runs on the CPU only"), std::string::npos)
      << refused.status();
}

TEST(PlacementFlags, CudaWithoutAGpuIsAClearError) {
  if (gpu_usable()) GTEST_SKIP() << "this machine has a GPU";
  auto resolved = resolve_placement("cuda", "auto");
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(resolved.status().message().find("no CUDA device") != std::string::npos ||
              resolved.status().message().find("no CUDA backend") != std::string::npos)
      << resolved.status();
}

}  // namespace
}  // namespace xlate
