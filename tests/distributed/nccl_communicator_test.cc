// The NCCL communicator with one rank on the GPU: NCCL puts at most one rank on a GPU, so
// several ranks are checked on the CPU schedule (MPI) and NCCL itself with one. Device buffers
// go through every collective and come back as a world of one must leave them; a build without
// NCCL refuses with UNIMPLEMENTED. Skips without a GPU.
#include "trainer/distributed/nccl_communicator.h"

#include <cstdint>
#include <vector>

#include "engine/backend/cuda_backend.h"
#include "engine/tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace xlate {
namespace {

std::vector<float> to_host(const Tensor& device) {
  const Tensor host = device.on(Device::kCPU);
  return std::vector<float>(host.data<float>(), host.data<float>() + host.numel());
}

TEST(NcclCommunicator, ABuildWithoutNcclRefusesNamingIt) {
  if (nccl_built()) GTEST_SKIP() << "this build has NCCL";
  SingleProcessCommunicator host;
  absl::StatusOr<std::unique_ptr<Communicator>> nccl = create_nccl_communicator(host);
  EXPECT_EQ(nccl.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(nccl.status().message()), ::testing::HasSubstr("no NCCL"));
}

TEST(NcclCommunicator, OneRankRunsEveryCollectiveOnDeviceMemory) {
  if (!nccl_built() || cuda_backend::device_count() == 0) {
    GTEST_SKIP() << "needs a GPU and a build with NCCL";
  }
  SingleProcessCommunicator host;
  absl::StatusOr<std::unique_ptr<Communicator>> created = create_nccl_communicator(host);
  ASSERT_TRUE(created.ok()) << created.status();
  Communicator& nccl = **created;
  EXPECT_EQ(nccl.name(), "nccl");
  EXPECT_EQ(nccl.world_size(), 1);
  std::vector<float> values(1001);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.25f * static_cast<float>(i) - 7.f;
  // Written by the training thread's stream just before each collective: the collective must
  // wait for that work, not read what the buffer held before.
  Tensor data = Tensor::zeros({1001}, DType::kFloat32, Device::kCUDA);
  data.copy_from(Tensor::from_vector(values, {1001}));
  ASSERT_TRUE(nccl.all_reduce_sum(data.data<float>(), 1001).ok());
  EXPECT_EQ(to_host(data), values);
  ASSERT_TRUE(nccl.reduce_scatter_sum(data.data<float>(), 1001).ok());
  ASSERT_TRUE(nccl.all_gather_shards(data.data<float>(), 1001).ok());
  EXPECT_EQ(to_host(data), values);
  ASSERT_TRUE(nccl.broadcast(data.data<float>(), 1001 * sizeof(float), 0).ok());
  EXPECT_EQ(to_host(data), values);
  Tensor gathered = Tensor::zeros({1001}, DType::kFloat32, Device::kCUDA);
  ASSERT_TRUE(nccl.all_gather(data.data<float>(), 1001 * sizeof(float), gathered.data<float>()).ok());
  EXPECT_EQ(to_host(gathered), values);
  EXPECT_TRUE(nccl.barrier().ok());
  EXPECT_EQ(nccl.all_reduce_sum(data.data<float>(), -1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(nccl.broadcast(data.data<float>(), 4, 1).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace xlate
