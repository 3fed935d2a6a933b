// The bucket plan and the overlapped reduction schedule, with a fake communicator that records
// every all-reduce call (the real MPI one runs in communicator_test.cc under mpirun).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trainer/distributed/bucketed_all_reduce.h"
#include "trainer/distributed/gradient_buckets.h"

namespace xlate {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Threading = BucketedAllReduce::Threading;

// A world of "two" ranks where the other rank's gradient is all ones: all_reduce_sum adds 1 to
// every element, and records which elements each call covered, in call order.
class RecordingCommunicator final : public Communicator {
 public:
  explicit RecordingCommunicator(const float* base, bool threads_allowed = true)
      : base_(base), threads_allowed_(threads_allowed) {}
  int rank() const override { return 0; }
  int world_size() const override { return 2; }
  std::string name() const override { return "recording"; }
  bool allows_collectives_from_any_thread() const override { return threads_allowed_; }
  absl::Status all_reduce_sum(float* data, int64_t count) override {
    for (int64_t i = 0; i < count; ++i) data[i] += 1.f;
    return record(data, count);
  }
  // This rank's part (the first, rank 0's) gets the other rank's ones; the rest is garbage.
  absl::Status reduce_scatter_sum(float* data, int64_t count) override {
    const FlatRange own = shard_of(count, 0, 2);
    for (int64_t i = 0; i < count; ++i) data[i] = i < own.end() ? data[i] + 1.f : -7.f;
    return record(data, count);
  }
  // The other rank's part arrives holding 5.
  absl::Status all_gather_shards(float* data, int64_t count) override {
    const FlatRange other = shard_of(count, 1, 2);
    for (int64_t i = other.offset; i < other.end(); ++i) data[i] = 5.f;
    std::lock_guard<std::mutex> lock(mutex_);
    gathers_.push_back({data - base_, count});
    return absl::OkStatus();
  }
  absl::Status record(float* data, int64_t count) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.push_back({data - base_, count});
    if (fail_from_call_ >= 0 && static_cast<int64_t>(calls_.size()) > fail_from_call_) {
      return absl::UnavailableError("the other rank is gone");
    }
    called_.notify_all();
    return absl::OkStatus();
  }
  absl::Status all_reduce_sum(double*, int64_t) override { return unused(); }
  absl::Status all_reduce_sum(int64_t*, int64_t) override { return unused(); }
  absl::Status all_reduce_max(int64_t*, int64_t) override { return unused(); }
  absl::Status broadcast(void*, int64_t, int) override { return unused(); }
  absl::Status all_gather(const void*, int64_t, void*) override { return unused(); }
  absl::Status barrier() override { return unused(); }
  [[noreturn]] void abort_job(int) override { std::abort(); }

  std::vector<FlatRange> calls() {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }
  std::vector<FlatRange> gathers() {
    std::lock_guard<std::mutex> lock(mutex_);
    return gathers_;
  }
  // Waits (up to 10 s) until at least `count` calls were made; the number made.
  size_t wait_for_calls(size_t count) {
    std::unique_lock<std::mutex> lock(mutex_);
    called_.wait_for(lock, std::chrono::seconds(10), [&] { return calls_.size() >= count; });
    return calls_.size();
  }
  void fail_after(int64_t calls) { fail_from_call_ = calls; }

 private:
  static absl::Status unused() { return absl::UnimplementedError("not used by the schedule"); }
  const float* base_;
  const bool threads_allowed_;
  std::mutex mutex_;
  std::condition_variable called_;
  std::vector<FlatRange> calls_;
  std::vector<FlatRange> gathers_;
  int64_t fail_from_call_ = -1;
};

// Element i of a buffer of n is covered how many times by `ranges`.
std::vector<int> coverage(const std::vector<FlatRange>& ranges, int64_t n) {
  std::vector<int> covered(static_cast<size_t>(n), 0);
  for (const FlatRange& r : ranges) {
    for (int64_t i = r.offset; i < r.end(); ++i) ++covered[static_cast<size_t>(i)];
  }
  return covered;
}

// Parameters like a model's, listed from the end of the buffer to its start (the order a
// backward pass finishes them), with a gap [40, 50) that is not reduced (a fixed table).
std::vector<FlatRange> model_like_ranges() {
  return {{90, 10}, {70, 20}, {66, 4}, {50, 16}, {30, 10}, {0, 30}};
}

TEST(GradientBuckets, PlanCoversEveryElementOnceWithinTheLimit) {
  const std::vector<FlatRange> ranges = model_like_ranges();
  for (int64_t limit : {0, 1, 3, 7, 16, 20, 25, 30, 1000}) {
    const std::vector<FlatRange> buckets = plan_gradient_buckets(ranges, limit);
    const std::vector<int> covered = coverage(buckets, 100);
    for (int64_t i = 0; i < 100; ++i) {
      EXPECT_EQ(covered[static_cast<size_t>(i)], i >= 40 && i < 50 ? 0 : 1)
          << "element " << i << ", limit " << limit;
    }
    for (const FlatRange& bucket : buckets) {
      EXPECT_LE(bucket.count, limit > 0 ? limit : 100) << "limit " << limit;
    }
  }
}

TEST(GradientBuckets, PlanMergesNeighboursInBackwardOrderAndCutsLargeTensors) {
  // No limit: one bucket per contiguous run, the later run (finished first) first.
  EXPECT_THAT(plan_gradient_buckets(model_like_ranges(), 0),
              ElementsAre(FlatRange{50, 50}, FlatRange{0, 40}));
  // 30 elements: [90,100)+[70,90) fill one; [66,70)+[50,66) the next; the gap starts a third.
  EXPECT_THAT(plan_gradient_buckets(model_like_ranges(), 30),
              ElementsAre(FlatRange{70, 30}, FlatRange{50, 20}, FlatRange{30, 10},
                          FlatRange{0, 30}));
  // Smaller than a tensor: the tensor is cut into pieces in memory order.
  EXPECT_THAT(plan_gradient_buckets({{10, 5}, {0, 10}}, 4),
              ElementsAre(FlatRange{10, 4}, FlatRange{14, 1}, FlatRange{0, 4}, FlatRange{4, 4},
                          FlatRange{8, 2}));
  EXPECT_TRUE(plan_gradient_buckets({}, 4).empty());
  EXPECT_THAT(plan_gradient_buckets({{0, 0}, {3, 2}}, 4), ElementsAre(FlatRange{3, 2}));
}

TEST(BucketedAllReduce, ReducesInPlanOrderWhateverOrderTheReportsCome) {
  const std::vector<FlatRange> ranges = model_like_ranges();
  std::mt19937 random(7);
  for (Threading threading : {Threading::kCallingThread, Threading::kBackgroundThread}) {
    for (int64_t limit : {0, 3, 16, 30}) {
      std::vector<float> gradient(100, 0.f);
      RecordingCommunicator communicator(gradient.data());
      auto reducer = BucketedAllReduce::Create(communicator, ranges, limit, threading);
      ASSERT_TRUE(reducer.ok()) << reducer.status();
      std::vector<FlatRange> reports = ranges;
      std::shuffle(reports.begin(), reports.end(), random);
      (*reducer)->begin(gradient.data());
      for (const FlatRange& r : reports) (*reducer)->ready(r);
      ASSERT_TRUE((*reducer)->finish().ok());
      EXPECT_EQ(communicator.calls(), (*reducer)->buckets()) << "limit " << limit;
      for (size_t i = 0; i < gradient.size(); ++i) {
        EXPECT_EQ(gradient[i], i >= 40 && i < 50 ? 0.f : 1.f) << "element " << i;
      }
    }
  }
}

TEST(BucketedAllReduce, StartsABucketAsSoonAsItAndTheOnesBeforeItAreFinal) {
  std::vector<float> gradient(100, 0.f);
  RecordingCommunicator communicator(gradient.data());
  auto reducer = BucketedAllReduce::Create(communicator, model_like_ranges(), 30,
                                           Threading::kCallingThread);
  ASSERT_TRUE(reducer.ok());
  BucketedAllReduce& r = **reducer;
  r.begin(gradient.data());
  r.ready({90, 10});
  EXPECT_TRUE(communicator.calls().empty());  // bucket [70, 100) still waits for [70, 90)
  r.ready({66, 4});
  r.ready({50, 16});
  EXPECT_TRUE(communicator.calls().empty());  // bucket [50, 70) is complete but comes second
  r.ready({70, 20});
  EXPECT_THAT(communicator.calls(), ElementsAre(FlatRange{70, 30}, FlatRange{50, 20}));
  r.ready({66, 4});  // a repeated report changes nothing
  EXPECT_EQ(communicator.calls().size(), 2u);
  r.ready({30, 10});
  EXPECT_EQ(communicator.calls().size(), 3u);
  ASSERT_TRUE(r.finish().ok());  // the unreported [0, 30) is reduced by finish()
  EXPECT_EQ(communicator.calls().size(), 4u);
  EXPECT_EQ(r.last_timing().buckets, 4);
}

TEST(BucketedAllReduce, OverlapsTheBackwardPassOnItsThread) {
  std::vector<float> gradient(100, 0.f);
  RecordingCommunicator communicator(gradient.data());
  auto reducer = BucketedAllReduce::Create(communicator, model_like_ranges(), 30,
                                           Threading::kBackgroundThread);
  ASSERT_TRUE(reducer.ok());
  (*reducer)->begin(gradient.data());
  (*reducer)->ready({90, 10});
  (*reducer)->ready({70, 20});
  // The first bucket is reduced while the "backward pass" (this thread) has not finished.
  EXPECT_EQ(communicator.wait_for_calls(1), 1u);
  EXPECT_THAT(communicator.calls(), ElementsAre(FlatRange{70, 30}));
  ASSERT_TRUE((*reducer)->finish().ok());
  EXPECT_EQ(communicator.calls().size(), 4u);
  // Reusable: a second reduction (the next step) reduces everything again.
  (*reducer)->begin(gradient.data());
  for (const FlatRange& r : model_like_ranges()) (*reducer)->ready(r);
  ASSERT_TRUE((*reducer)->finish().ok());
  EXPECT_EQ(communicator.calls().size(), 8u);
  EXPECT_EQ(gradient[0], 2.f);
}

TEST(BucketedAllReduce, ErrorsAreReturnedAndStopLaterCollectives) {
  for (Threading threading : {Threading::kCallingThread, Threading::kBackgroundThread}) {
    std::vector<float> gradient(100, 0.f);
    RecordingCommunicator communicator(gradient.data());
    communicator.fail_after(1);  // the second call fails
    auto reducer = BucketedAllReduce::Create(communicator, model_like_ranges(), 16, threading);
    ASSERT_TRUE(reducer.ok());
    (*reducer)->begin(gradient.data());
    const absl::Status status = (*reducer)->finish();
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(std::string(status.message()), HasSubstr("gradient bucket 2 of"));
    EXPECT_THAT(std::string(status.message()), HasSubstr("the other rank is gone"));
    EXPECT_EQ(communicator.calls().size(), 2u);
  }
  std::vector<float> gradient(100, 0.f);
  RecordingCommunicator communicator(gradient.data());
  auto reducer = BucketedAllReduce::Create(communicator, model_like_ranges(), 16,
                                           Threading::kCallingThread);
  ASSERT_TRUE(reducer.ok());
  (*reducer)->begin(gradient.data());
  (*reducer)->ready({91, 9});  // not a parameter
  const absl::Status status = (*reducer)->finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(status.message()), HasSubstr("[91, 100)"));
  EXPECT_EQ(gradient[95], 1.f);  // still reduced
}

// ZeRO-1: every bucket is reduce-scattered; this rank (0 of 2) owns the first half of each
// bucket, receives the sum there, and the gather brings the other half back from rank 1.
TEST(BucketedAllReduce, ReduceScatterLeavesEachRankItsShardOfEveryBucketThenGathers) {
  for (Threading threading : {Threading::kCallingThread, Threading::kBackgroundThread}) {
    for (int64_t limit : {0, 3, 16, 30}) {
      std::vector<float> gradient(100, 0.f);
      RecordingCommunicator communicator(gradient.data());
      auto reducer = BucketedAllReduce::Create(communicator, model_like_ranges(), limit, threading,
                                               BucketedAllReduce::Reduction::kReduceScatter);
      ASSERT_TRUE(reducer.ok()) << reducer.status();
      const std::vector<FlatRange> buckets = (*reducer)->buckets();
      (*reducer)->begin(gradient.data());
      for (const FlatRange& r : model_like_ranges()) (*reducer)->ready(r);
      ASSERT_TRUE((*reducer)->finish().ok());
      EXPECT_EQ(communicator.calls(), buckets) << "limit " << limit;
      const std::vector<FlatRange> shards = (*reducer)->shards();
      std::vector<FlatRange> expected;
      for (const FlatRange& b : buckets) {
        const int64_t half = (b.count + 1) / 2;  // rank 0's part is the longer one
        expected.push_back({b.offset, half});
      }
      EXPECT_EQ(shards, expected) << "limit " << limit;
      const std::vector<int> owned = coverage(shards, 100);
      for (size_t i = 0; i < gradient.size(); ++i) {
        if (owned[i]) {
          EXPECT_EQ(gradient[i], 1.f) << "element " << i;
        }
      }
      ASSERT_TRUE((*reducer)->all_gather(gradient.data()).ok());
      EXPECT_EQ(communicator.gathers(), buckets);
      for (size_t i = 0; i < gradient.size(); ++i) {
        const float expected_value = i >= 40 && i < 50 ? 0.f : owned[i] ? 1.f : 5.f;
        EXPECT_EQ(gradient[i], expected_value) << "element " << i << ", limit " << limit;
      }
    }
  }
}

TEST(BucketedAllReduce, RefusesBadRangesAndThreadsTheCommunicatorForbids) {
  std::vector<float> gradient(100, 0.f);
  RecordingCommunicator communicator(gradient.data());
  auto overlapping = BucketedAllReduce::Create(communicator, {{0, 10}, {5, 10}}, 4,
                                               Threading::kCallingThread);
  EXPECT_EQ(overlapping.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(overlapping.status().message()), HasSubstr("overlap"));
  auto negative = BucketedAllReduce::Create(communicator, {{0, 10}}, -1, Threading::kCallingThread);
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  RecordingCommunicator single_threaded(gradient.data(), /*threads_allowed=*/false);
  auto threaded = BucketedAllReduce::Create(single_threaded, {{0, 10}}, 4,
                                            Threading::kBackgroundThread);
  EXPECT_EQ(threaded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(threaded.status().message()), HasSubstr("another thread"));
}

}  // namespace
}  // namespace xlate
