// Tests of the trainer's Communicator. The same binary runs in two ways (tests/distributed/
// CMakeLists.txt): plainly, where create_communicator() gives the single-process world of one,
// and under `mpirun -np 2`, where it gives MPI and every rank runs every test.
//
// Rules for tests here, so that a failure cannot hang the other rank: every rank makes the same
// collective calls in the same order whatever its values are; checks (EXPECT_*) come after the
// collectives; ASSERT_* only where it returns on every rank alike (e.g. on a status that every
// rank shares). main() agrees on the result across ranks: any failed test on any rank makes
// every rank exit non-zero.
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trainer/distributed/bucketed_all_reduce.h"
#include "trainer/distributed/communicator.h"
#include "trainer/distributed/mpi_communicator.h"

namespace xlate {
namespace {

// The communicator of the whole run, made in main() before any test.
Communicator* g_comm = nullptr;

using ::testing::HasSubstr;

int expected_world_size() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return size == nullptr ? 1 : std::atoi(size);
}

TEST(Communicator, RankAndWorldSizeMatchTheLauncher) {
  EXPECT_EQ(g_comm->world_size(), expected_world_size());
  EXPECT_GE(g_comm->rank(), 0);
  EXPECT_LT(g_comm->rank(), g_comm->world_size());
  EXPECT_EQ(g_comm->name(), launched_by_mpi() ? "mpi" : "single-process");
  if (const char* rank = std::getenv("OMPI_COMM_WORLD_RANK")) {
    EXPECT_EQ(g_comm->rank(), std::atoi(rank));
  }
}

TEST(Communicator, AllReduceSumFloatIsExact) {
  // Rank r contributes (r + 1) * (i % 97) + r / 4: small integers and quarters, so every
  // partial sum is exact in float whatever the order of additions.
  const int world = g_comm->world_size();
  const int rank = g_comm->rank();
  std::vector<float> data(1000);
  for (size_t i = 0; i < data.size(); ++i) {
    data[i] = static_cast<float>((rank + 1) * static_cast<int>(i % 97)) + 0.25f * rank;
  }
  const absl::Status status = g_comm->all_reduce_sum(data.data(), 1000);
  ASSERT_TRUE(status.ok()) << status;
  const float rank_sum = world * (world + 1) / 2.0f;  // sum of (r + 1)
  const float quarter_sum = 0.25f * world * (world - 1) / 2.0f;
  for (size_t i = 0; i < data.size(); ++i) {
    ASSERT_EQ(data[i], rank_sum * static_cast<float>(i % 97) + quarter_sum) << "at " << i;
  }
}

TEST(Communicator, AllReduceSumOfAGradientSizedBuffer) {
  // 4M floats (16 MB): MPI's large-message protocol rather than its eager one.
  const int world = g_comm->world_size();
  const int rank = g_comm->rank();
  const int64_t count = int64_t{1} << 22;
  std::vector<float> data(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) data[i] = static_cast<float>((i & 1023) + rank);
  ASSERT_TRUE(g_comm->all_reduce_sum(data.data(), count).ok());
  const float ranks = world * (world - 1) / 2.0f;
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (data[i] != static_cast<float>(world * (i & 1023)) + ranks) ++wrong;
  }
  EXPECT_EQ(wrong, 0);
}

TEST(Communicator, AllReduceSumDouble) {
  const int world = g_comm->world_size();
  const int rank = g_comm->rank();
  std::vector<double> data = {1.0, -2.5 * rank, 1e10 * (rank + 1), 0.125};
  ASSERT_TRUE(g_comm->all_reduce_sum(data.data(), 4).ok());
  EXPECT_EQ(data[0], world);
  EXPECT_EQ(data[1], -2.5 * world * (world - 1) / 2);
  EXPECT_EQ(data[2], 1e10 * world * (world + 1) / 2);
  EXPECT_EQ(data[3], 0.125 * world);
}

TEST(Communicator, AllReduceSumInt64UsesAll64Bits) {
  const int world = g_comm->world_size();
  const int64_t rank = g_comm->rank();
  const int64_t big = int64_t{1} << 40;
  std::vector<int64_t> data = {big * (rank + 1) + rank, -rank, 7};
  ASSERT_TRUE(g_comm->all_reduce_sum(data.data(), 3).ok());
  const int64_t ranks = int64_t{world} * (world - 1) / 2;
  EXPECT_EQ(data[0], big * (ranks + world) + ranks);
  EXPECT_EQ(data[1], -ranks);
  EXPECT_EQ(data[2], 7 * world);
}

TEST(Communicator, AllReduceMaxInt64) {
  const int world = g_comm->world_size();
  const int64_t rank = g_comm->rank();
  std::vector<int64_t> data = {rank, -rank, rank == 0 ? 5 : 0};
  ASSERT_TRUE(g_comm->all_reduce_max(data.data(), 3).ok());
  EXPECT_EQ(data[0], world - 1);
  EXPECT_EQ(data[1], 0);
  EXPECT_EQ(data[2], 5);
}

TEST(Communicator, ZeroCountIsANoOp) {
  EXPECT_TRUE(g_comm->all_reduce_sum(static_cast<float*>(nullptr), 0).ok());
  EXPECT_TRUE(g_comm->broadcast(nullptr, 0, 0).ok());
  EXPECT_TRUE(g_comm->all_gather(nullptr, 0, nullptr).ok());
}

TEST(Communicator, BadArgumentsAreRejectedBeforeAnyCommunication) {
  float value = 1.0f;
  EXPECT_EQ(g_comm->all_reduce_sum(&value, -1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(g_comm->all_reduce_sum(static_cast<double*>(nullptr), 3).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(g_comm->reduce_scatter_sum(&value, -1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(g_comm->all_gather_shards(nullptr, 3).code(), absl::StatusCode::kInvalidArgument);
  const absl::Status bad_root = g_comm->broadcast(&value, sizeof(value), g_comm->world_size());
  EXPECT_EQ(bad_root.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad_root.message()), HasSubstr("root"));
  EXPECT_EQ(g_comm->broadcast(&value, sizeof(value), -1).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Communicator, BroadcastFromEveryRoot) {
  const int world = g_comm->world_size();
  for (int root = 0; root < world; ++root) {
    std::vector<unsigned char> data(1000, 0xff);
    if (g_comm->rank() == root) {
      for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 7 + root);
    }
    ASSERT_TRUE(g_comm->broadcast(data.data(), 1000, root).ok());
    for (size_t i = 0; i < data.size(); ++i) {
      ASSERT_EQ(data[i], static_cast<unsigned char>(i * 7 + root))
          << "root " << root << " at " << i;
    }
  }
}

TEST(Communicator, AllGather) {
  const int world = g_comm->world_size();
  const int32_t rank = g_comm->rank();
  const int32_t mine[3] = {rank, rank * 10, -rank};
  std::vector<int32_t> all(3 * static_cast<size_t>(world), -99);
  ASSERT_TRUE(g_comm->all_gather(mine, sizeof(mine), all.data()).ok());
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(all[3 * r + 0], r);
    EXPECT_EQ(all[3 * r + 1], r * 10);
    EXPECT_EQ(all[3 * r + 2], -r);
  }
}

TEST(Communicator, Barrier) { EXPECT_TRUE(g_comm->barrier().ok()); }

TEST(ShardOf, PartsAreContiguousInRankOrderAndDifferByAtMostOne) {
  for (int world : {1, 2, 3, 8}) {
    for (int64_t count : {0, 1, 2, 7, 8, 9, 1000}) {
      int64_t next = 0;
      for (int r = 0; r < world; ++r) {
        const FlatRange part = shard_of(count, r, world);
        EXPECT_EQ(part.offset, next) << count << " over " << world << ", rank " << r;
        EXPECT_TRUE(part.count == count / world || part.count == count / world + 1);
        EXPECT_GE(part.count, shard_of(count, world - 1, world).count);
        next = part.end();
      }
      EXPECT_EQ(next, count) << count << " over " << world;
    }
  }
}

// Rank r contributes exact small values; after reduce_scatter_sum its own part holds the sums
// (the rest is not looked at), and all_gather_shards then gives every rank every part.
void expect_reduce_scatter_then_gather(Communicator& comm, int64_t count) {
  const int world = comm.world_size();
  const int rank = comm.rank();
  std::vector<float> data(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) data[i] = static_cast<float>((rank + 1) * (i % 31) + rank);
  ASSERT_TRUE(comm.reduce_scatter_sum(data.data(), count).ok());
  const float rank_sum = world * (world + 1) / 2.0f;
  const float offset_sum = world * (world - 1) / 2.0f;
  const FlatRange own = shard_of(count, rank, world);
  for (int64_t i = own.offset; i < own.end(); ++i) {
    ASSERT_EQ(data[i], rank_sum * static_cast<float>(i % 31) + offset_sum) << count << " at " << i;
  }
  // Each rank marks its part so that the gather has to bring the others' values.
  for (int64_t i = own.offset; i < own.end(); ++i) data[i] += 1000.0f * static_cast<float>(rank);
  for (int64_t i = 0; i < count; ++i) {
    if (i < own.offset || i >= own.end()) data[i] = -1;
  }
  ASSERT_TRUE(comm.all_gather_shards(data.data(), count).ok());
  for (int r = 0; r < world; ++r) {
    const FlatRange part = shard_of(count, r, world);
    for (int64_t i = part.offset; i < part.end(); ++i) {
      ASSERT_EQ(data[i], rank_sum * static_cast<float>(i % 31) + offset_sum + 1000.0f * r)
          << count << " at " << i << " (rank " << r << "'s part)";
    }
  }
}

TEST(Communicator, ReduceScatterThenAllGatherShards) {
  for (int64_t count : {0, 1, 2, 3, 5, 1000, 4099}) expect_reduce_scatter_then_gather(*g_comm, count);
}

// The overlapped schedule on the real transport: the ranks report their parameters in different
// orders (the last rank reports none, like a rank whose shard of a micro-batch was empty), yet
// they agree on the collectives and every element ends up summed exactly once, step after step.
TEST(BucketedAllReduce, SumsEveryRanksGradientOnItsThread) {
  const int world = g_comm->world_size();
  const int rank = g_comm->rank();
  const std::vector<FlatRange> ranges = {{700, 300}, {400, 300}, {390, 10}, {0, 350}};
  const BucketedAllReduce::Threading threading =
      g_comm->allows_collectives_from_any_thread() ? BucketedAllReduce::Threading::kBackgroundThread
                                                   : BucketedAllReduce::Threading::kCallingThread;
  absl::StatusOr<std::unique_ptr<BucketedAllReduce>> reducer =
      BucketedAllReduce::Create(*g_comm, ranges, 64, threading);
  ASSERT_TRUE(reducer.ok()) << reducer.status();
  std::vector<float> gradient(1000);
  for (int step = 0; step < 3; ++step) {
    for (size_t i = 0; i < gradient.size(); ++i) {
      gradient[i] = static_cast<float>((rank + 1) * (step + 1)) + static_cast<float>(i % 7);
    }
    (*reducer)->begin(gradient.data());
    if (rank + 1 < world || world == 1) {
      for (size_t k = 0; k < ranges.size(); ++k) {
        (*reducer)->ready(ranges[(k + static_cast<size_t>(rank)) % ranges.size()]);
      }
    }
    const absl::Status status = (*reducer)->finish();
    ASSERT_TRUE(status.ok()) << status;
    const float rank_sum = static_cast<float>(world * (world + 1) / 2 * (step + 1));
    for (size_t i = 0; i < gradient.size(); ++i) {
      const bool reduced = i < 350 || i >= 390;
      const float mine = static_cast<float>((rank + 1) * (step + 1)) + static_cast<float>(i % 7);
      ASSERT_EQ(gradient[i], reduced ? rank_sum + world * static_cast<float>(i % 7) : mine)
          << "step " << step << ", element " << i;
    }
  }
  EXPECT_GT((*reducer)->last_timing().buckets, 10);
}

// A second communicator of the same kind whose transport calls carry at most 3 elements (bytes
// for broadcast/all_gather), so that a collective of n elements takes ceil(n / 3) calls: the
// path that counts above INT_MAX take with the real limit.
class ChunkedCommunicator : public ::testing::Test {
 protected:
  void SetUp() override {
    CommunicatorOptions options;
    options.max_count_per_call = 3;
    absl::StatusOr<std::unique_ptr<Communicator>> created = create_communicator(options);
    ASSERT_TRUE(created.ok()) << created.status();
    comm_ = std::move(created).value();
    ASSERT_EQ(comm_->world_size(), g_comm->world_size());
    ASSERT_EQ(comm_->rank(), g_comm->rank());
  }
  std::unique_ptr<Communicator> comm_;
};

TEST_F(ChunkedCommunicator, AllReduceSumAcrossChunkBoundaries) {
  const int world = comm_->world_size();
  const int rank = comm_->rank();
  for (int64_t count : {1, 2, 3, 4, 6, 10, 100}) {
    std::vector<float> f(static_cast<size_t>(count));
    std::vector<double> d(static_cast<size_t>(count));
    std::vector<int64_t> n(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      f[i] = static_cast<float>(i + 1000 * rank);
      d[i] = static_cast<double>(-i + 1000 * rank);
      n[i] = i * (rank + 1);
    }
    ASSERT_TRUE(comm_->all_reduce_sum(f.data(), count).ok());
    ASSERT_TRUE(comm_->all_reduce_sum(d.data(), count).ok());
    ASSERT_TRUE(comm_->all_reduce_sum(n.data(), count).ok());
    const int64_t ranks = int64_t{world} * (world - 1) / 2;
    for (int64_t i = 0; i < count; ++i) {
      ASSERT_EQ(f[i], static_cast<float>(world * i + 1000 * ranks)) << count << " at " << i;
      ASSERT_EQ(d[i], static_cast<double>(-world * i + 1000 * ranks)) << count << " at " << i;
      ASSERT_EQ(n[i], i * (ranks + world)) << count << " at " << i;
    }
  }
}

TEST_F(ChunkedCommunicator, BroadcastAcrossChunkBoundaries) {
  const int root = comm_->world_size() - 1;
  std::vector<unsigned char> data(23, 0);
  if (comm_->rank() == root) {
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(200 - i);
  }
  ASSERT_TRUE(comm_->broadcast(data.data(), 23, root).ok());
  for (size_t i = 0; i < data.size(); ++i) {
    EXPECT_EQ(data[i], static_cast<unsigned char>(200 - i)) << "at " << i;
  }
}

TEST_F(ChunkedCommunicator, ReduceScatterAndAllGatherShardsLargerThanOneCall) {
  for (int64_t count : {1, 3, 4, 10, 101}) expect_reduce_scatter_then_gather(*comm_, count);
}

TEST_F(ChunkedCommunicator, AllGatherLargerThanOneCall) {
  // 8 bytes per rank > 3: the broadcast-per-rank path.
  const int world = comm_->world_size();
  const int64_t mine = (int64_t{comm_->rank()} << 33) + 5;
  std::vector<int64_t> all(static_cast<size_t>(world), 0);
  ASSERT_TRUE(comm_->all_gather(&mine, sizeof(mine), all.data()).ok());
  for (int r = 0; r < world; ++r) EXPECT_EQ(all[r], (int64_t{r} << 33) + 5) << "rank " << r;
}

TEST(Fingerprint, DependsOnEveryByteAndTheLength) {
  std::vector<unsigned char> bytes(37);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 13);
  const uint64_t base = fingerprint_bytes(bytes.data(), 37);
  EXPECT_EQ(fingerprint_bytes(bytes.data(), 37), base);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::vector<unsigned char> changed = bytes;
    changed[i] ^= 1;
    EXPECT_NE(fingerprint_bytes(changed.data(), 37), base) << "byte " << i;
  }
  std::vector<unsigned char> longer = bytes;
  longer.push_back(0);
  EXPECT_NE(fingerprint_bytes(longer.data(), 38), base);
  EXPECT_NE(fingerprint_bytes(bytes.data(), 36), base);
  EXPECT_NE(fingerprint_bytes(bytes.data(), 37, base), base);  // chaining
  EXPECT_NE(fingerprint_bytes(nullptr, 0), fingerprint_bytes(nullptr, 0, 1));
}

TEST(CheckSameOnAllRanks, AgreeingRanksPass) {
  const uint64_t fingerprint = fingerprint_bytes("weights", 7);
  const absl::Status status = check_same_on_all_ranks(*g_comm, fingerprint, "the weights");
  EXPECT_TRUE(status.ok()) << status;
}

TEST(CheckSameOnAllRanks, AMismatchNamesWhatAndTheRanksOnEveryRank) {
  const int world = g_comm->world_size();
  const int rank = g_comm->rank();
  // The last rank differs (in a world of one there is nobody to differ from).
  const uint64_t fingerprint = (world > 1 && rank == world - 1) ? 0xbadULL : 0x600dULL;
  const absl::Status status = check_same_on_all_ranks(*g_comm, fingerprint, "the config");
  if (world == 1) {
    EXPECT_TRUE(status.ok()) << status;
    return;
  }
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  const std::string message(status.message());
  EXPECT_THAT(message, HasSubstr("the config"));
  EXPECT_THAT(message, HasSubstr("rank " + std::to_string(world - 1) + " differs from rank 0"));
  EXPECT_THAT(message, HasSubstr("0000000000000bad"));
  EXPECT_THAT(message, HasSubstr("000000000000600d"));
}

TEST(SingleProcessCommunicator, IsAWorldOfOne) {
  SingleProcessCommunicator single;
  EXPECT_EQ(single.rank(), 0);
  EXPECT_EQ(single.world_size(), 1);
  float values[2] = {1.5f, -2.0f};
  ASSERT_TRUE(single.all_reduce_sum(values, 2).ok());
  EXPECT_EQ(values[0], 1.5f);
  EXPECT_EQ(values[1], -2.0f);
  const char send[4] = {'a', 'b', 'c', 'd'};
  char recv[4] = {};
  ASSERT_TRUE(single.all_gather(send, 4, recv).ok());
  EXPECT_EQ(std::string(recv, 4), "abcd");
  EXPECT_TRUE(single.broadcast(recv, 4, 0).ok());
  EXPECT_EQ(single.broadcast(recv, 4, 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(check_same_on_all_ranks(single, 42, "anything").ok());
}

TEST(CreateCommunicator, SingleProcessOnRequestEvenUnderALauncher) {
  CommunicatorOptions options;
  options.backend = CommunicatorOptions::Backend::kSingleProcess;
  absl::StatusOr<std::unique_ptr<Communicator>> created = create_communicator(options);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)->world_size(), 1);
  EXPECT_EQ((*created)->name(), "single-process");
}

TEST(CreateCommunicator, RejectsAChunkSizeAnMpiCountCannotHold) {
  for (int64_t bad : {int64_t{0}, int64_t{-5}, int64_t{1} << 31}) {
    CommunicatorOptions options;
    options.backend = CommunicatorOptions::Backend::kMpi;
    options.max_count_per_call = bad;
    absl::StatusOr<std::unique_ptr<Communicator>> created = create_communicator(options);
    EXPECT_EQ(created.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(MpiErrorStatus, CarriesMpisErrorString) {
  if (g_comm->name() != "mpi") GTEST_SKIP() << "MPI is initialised only under a launcher";
  const absl::Status status = mpi_error_status("MPI_Bcast", MPI_ERR_ROOT);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  const std::string message(status.message());
  EXPECT_THAT(message, HasSubstr("MPI_Bcast failed: "));
  EXPECT_THAT(message, HasSubstr("root"));
}

// Run only by the CTest test that checks failure propagation (WILL_FAIL): fails on the last
// rank alone, and the whole mpirun must still exit non-zero.
TEST(FailurePropagation, DISABLED_FailsOnTheLastRankOnly) {
  EXPECT_NE(g_comm->rank(), g_comm->world_size() - 1) << "deliberate failure on the last rank";
}

// On ranks other than 0 the default printer is replaced by this one, which prints only failed
// assertions, marked with the rank, so that the ranks' output does not interleave.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::cerr << "[rank " << rank_ << "] " << (result.file_name() ? result.file_name() : "?")
              << ":" << result.line_number() << ": failure\n"
              << result.summary() << std::endl;
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed()) {
      std::cerr << "[rank " << rank_ << "] FAILED " << info.test_suite_name() << "."
                << info.name() << std::endl;
    }
  }

 private:
  int rank_;
};

}  // namespace
}  // namespace xlate

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  absl::StatusOr<std::unique_ptr<xlate::Communicator>> comm = xlate::create_communicator();
  if (!comm.ok()) {
    std::cerr << "cannot create the communicator: " << comm.status() << std::endl;
    return 1;
  }
  xlate::g_comm = comm->get();
  const int rank = xlate::g_comm->rank();
  if (rank != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new xlate::RankFailurePrinter(rank));
  }
  const int result = RUN_ALL_TESTS();
  // Every rank exits non-zero when any rank had a failure.
  int64_t failed = result != 0 ? 1 : 0;
  const absl::Status status = xlate::g_comm->all_reduce_max(&failed, 1);
  if (!status.ok()) {
    std::cerr << "[rank " << rank << "] cannot agree on the result: " << status << std::endl;
    return 1;
  }
  if (failed != 0 && rank == 0 && result == 0) {
    std::cerr << "[rank 0] tests failed on another rank (see its [rank N] lines)" << std::endl;
  }
  comm->reset();  // finalises MPI
  return failed != 0 ? 1 : 0;
}
