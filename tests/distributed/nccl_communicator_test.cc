// The NCCL communicator with one rank on the GPU: NCCL puts at most one rank on a GPU, so
// several ranks are checked on the CPU schedule (MPI) and NCCL itself with one. Device buffers
// go through every collective and come back as a world of one must leave them; a build without
// NCCL refuses with UNIMPLEMENTED. Skips without a GPU, or without libnccl.so.2 on the machine.
#include "trainer/distributed/nccl_communicator.h"

#include <cstdint>
#include <thread>
#include <vector>

#include "tests/gpu_required.h"
#include "engine/ops/backend.h"
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

// The one-rank NCCL communicator on this machine's GPU, or why the test cannot run.
class OneRankNccl : public ::testing::Test {
 protected:
  void SetUp() override {
    XLATE_SKIP_WITHOUT_GPU();
    if (!nccl_built()) GTEST_SKIP() << "needs a build with NCCL";
    absl::StatusOr<std::unique_ptr<Communicator>> created = create_nccl_communicator(host_);
    if (created.status().code() == absl::StatusCode::kUnavailable) {
      GTEST_SKIP() << "no NCCL library on this machine: " << created.status();
    }
    ASSERT_TRUE(created.ok()) << created.status();
    nccl_ = std::move(*created);
  }
  SingleProcessCommunicator host_;
  std::unique_ptr<Communicator> nccl_;
};

TEST_F(OneRankNccl, RunsEveryCollectiveOnDeviceMemory) {
  Communicator& nccl = *nccl_;
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
  // Nothing to do is no error, even without a buffer.
  EXPECT_TRUE(nccl.all_reduce_sum(static_cast<float*>(nullptr), 0).ok());
  EXPECT_TRUE(nccl.reduce_scatter_sum(nullptr, 0).ok());
  EXPECT_TRUE(nccl.all_gather_shards(nullptr, 0).ok());
  EXPECT_TRUE(nccl.broadcast(nullptr, 0, 0).ok());
  EXPECT_TRUE(nccl.all_gather(nullptr, 0, nullptr).ok());
}

TEST_F(OneRankNccl, TheOtherElementTypesOnDeviceMemory) {
  Communicator& nccl = *nccl_;
  // int64 and double device buffers: 32 bytes of device memory each (held as 8 int32s).
  std::vector<int64_t> integers = {-3, 0, 7, int64_t{1} << 40};
  std::vector<double> reals = {-2.5, 0.0, 1e-300, 6.02e23};
  Tensor integer_bytes = Tensor::zeros({8}, DType::kInt32, Device::kCUDA);
  Tensor real_bytes = Tensor::zeros({8}, DType::kInt32, Device::kCUDA);
  op_backend(Device::kCUDA).copy_from_host(integer_bytes.raw_data(), integers.data(), 32);
  op_backend(Device::kCUDA).copy_from_host(real_bytes.raw_data(), reals.data(), 32);
  auto* device_integers = static_cast<int64_t*>(integer_bytes.raw_data());
  auto* device_reals = static_cast<double*>(real_bytes.raw_data());
  ASSERT_TRUE(nccl.all_reduce_sum(device_integers, 4).ok());
  ASSERT_TRUE(nccl.all_reduce_max(device_integers, 4).ok());
  ASSERT_TRUE(nccl.all_reduce_sum(device_reals, 4).ok());
  std::vector<int64_t> integers_back(4);
  std::vector<double> reals_back(4);
  op_backend(Device::kCUDA).copy_to_host(integers_back.data(), device_integers, 32);
  op_backend(Device::kCUDA).copy_to_host(reals_back.data(), device_reals, 32);
  EXPECT_EQ(integers_back, integers);
  EXPECT_EQ(reals_back, reals);
}

// The bucketed reduction calls collectives from a thread of its own while the training thread
// keeps queueing work: a collective must wait for what the training thread's stream had queued
// when it was called, whichever thread calls it. 20 large copies of zeros then the values are
// queued; a collective that did not wait would gather zeros.
TEST_F(OneRankNccl, ACollectiveFromAnotherThreadWaitsForTheTrainingStream) {
  Communicator& nccl = *nccl_;
  const int64_t count = int64_t{1} << 26;  // 256 MB of float32
  std::vector<float> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) values[static_cast<size_t>(i)] = static_cast<float>(i % 977);
  const Tensor source = Tensor::from_vector(values, {count}).to(Device::kCUDA);
  const Tensor zeros = Tensor::zeros({count}, DType::kFloat32, Device::kCUDA);
  Tensor data = Tensor::zeros({count}, DType::kFloat32, Device::kCUDA);
  Tensor gathered = Tensor::zeros({count}, DType::kFloat32, Device::kCUDA);
  op_backend(Device::kCUDA).synchronize();
  for (int i = 0; i < 20; ++i) data.copy_from(zeros);
  data.copy_from(source);  // queued on the training thread's stream, not yet run
  absl::Status status;
  std::thread reducer([&] {
    status = nccl.all_gather(data.data<float>(), count * static_cast<int64_t>(sizeof(float)),
                             gathered.data<float>());
  });
  reducer.join();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_TRUE(to_host(gathered) == values);
}

}  // namespace
}  // namespace xlate
