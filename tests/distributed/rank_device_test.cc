// Which GPU each rank of a node takes (trainer/distributed/rank_device.h).
#include "trainer/distributed/rank_device.h"

#include <cstdlib>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace xlate {
namespace {

using ::testing::HasSubstr;

TEST(RankVisibleDevice, LocalRankIndexesTheFlagThenTheEnvironmentThenTheDevices) {
  EXPECT_EQ(*rank_visible_device(0, "", std::nullopt), "0");
  EXPECT_EQ(*rank_visible_device(3, "", std::nullopt), "3");
  EXPECT_EQ(*rank_visible_device(3, "", std::string("")), "3");
  EXPECT_EQ(*rank_visible_device(1, "", std::string("4,5,6")), "5");
  EXPECT_EQ(*rank_visible_device(1, "", std::string("GPU-8f2a,GPU-77c1")), "GPU-77c1");
  EXPECT_EQ(*rank_visible_device(2, "7,3,1", std::string("4,5,6")), "1");  // the flag wins
  EXPECT_EQ(*rank_visible_device(1, "0, 1", std::nullopt), "1");
}

TEST(RankVisibleDevice, AOneGpuListIsTheRanksOwnWhateverItsLocalRank) {
  // Slurm's srun --gpus-per-task=1 gives each task its own one-entry CUDA_VISIBLE_DEVICES.
  EXPECT_EQ(*rank_visible_device(0, "", std::string("3")), "3");
  EXPECT_EQ(*rank_visible_device(5, "", std::string("3")), "3");
  EXPECT_EQ(*rank_visible_device(5, "", std::string(" GPU-8f2a ")), "GPU-8f2a");
  // --devices is the user's list for the node's ranks: it is indexed as given.
  EXPECT_FALSE(rank_visible_device(1, "3", std::nullopt).ok());
}

TEST(RankVisibleDevice, ARankWithoutAnEntryIsRefusedNamingTheList) {
  const absl::StatusOr<std::string> flag = rank_visible_device(2, "0,1", std::nullopt);
  EXPECT_EQ(flag.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(flag.status().message()),
              HasSubstr("local rank 2 has no GPU: --devices \"0,1\" lists 2"));
  const absl::StatusOr<std::string> environment =
      rank_visible_device(2, "", std::string("3,4"));
  EXPECT_THAT(std::string(environment.status().message()),
              HasSubstr("CUDA_VISIBLE_DEVICES \"3,4\" lists 2"));
  const absl::StatusOr<std::string> empty = rank_visible_device(1, "0,,2", std::nullopt);
  EXPECT_THAT(std::string(empty.status().message()), HasSubstr("empty entry for local rank 1"));
}

TEST(SelectRankGpu, NarrowsCudaVisibleDevicesUnderALauncherOnly) {
  unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
  unsetenv("MPI_LOCALRANKID");
  unsetenv("SLURM_LOCALID");
  setenv("CUDA_VISIBLE_DEVICES", "2,3", 1);
  absl::StatusOr<std::optional<std::string>> none = select_rank_gpu("");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_STREQ(std::getenv("CUDA_VISIBLE_DEVICES"), "2,3");

  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  absl::StatusOr<std::optional<std::string>> chosen = select_rank_gpu("");
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  EXPECT_EQ(chosen->value_or(""), "3");
  EXPECT_STREQ(std::getenv("CUDA_VISIBLE_DEVICES"), "3");
  unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
  unsetenv("CUDA_VISIBLE_DEVICES");
}

}  // namespace
}  // namespace xlate
