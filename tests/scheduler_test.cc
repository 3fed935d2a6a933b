// The scheduler with a fake engine: results reach their request in order, a full queue refuses
// at once, cancelled and expired work never reaches the engine, full batches do not wait.
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "absl/synchronization/notification.h"
#include "server/scheduler.h"

namespace xlate::server {
namespace {

// A fake engine: the hypothesis of a source is the source reversed. Optionally blocks each
// batch until released, and records what it saw.
class FakeEngine {
 public:
  BatchRunner runner() {
    return [this](const std::vector<std::vector<int32_t>>& sources, const TranslationOptions&) {
      {
        absl::MutexLock lock(&mutex_);
        batches_.push_back(sources);
      }
      if (!started_.HasBeenNotified()) started_.Notify();  // batches run on one thread
      if (blocking_) release_.WaitForNotification();
      std::vector<std::vector<Hypothesis>> results;
      for (const auto& source : sources) {
        results.push_back({Hypothesis{std::vector<int32_t>(source.rbegin(), source.rend()), 0.f, 0.f}});
      }
      return absl::StatusOr<std::vector<std::vector<Hypothesis>>>(results);
    };
  }
  void block() { blocking_ = true; }
  void release() {
    if (!release_.HasBeenNotified()) release_.Notify();  // only the test thread releases
  }
  void wait_started() { started_.WaitForNotification(); }
  std::vector<std::vector<std::vector<int32_t>>> batches() {
    absl::MutexLock lock(&mutex_);
    return batches_;
  }

 private:
  absl::Mutex mutex_;
  std::vector<std::vector<std::vector<int32_t>>> batches_;
  std::atomic<bool> blocking_{false};
  absl::Notification started_, release_;
};

Scheduler::Options options(int batch_sentences, absl::Duration delay, int64_t capacity = 100) {
  Scheduler::Options result;
  result.limits.max_batch_sentences = batch_sentences;
  result.limits.max_batch_tokens = 100000;
  result.limits.max_queue_delay = delay;
  result.queue_capacity = capacity;
  return result;
}

const absl::Time kNoDeadline = absl::InfiniteFuture();

TEST(Scheduler, ResultsReachTheirRequestInOrder) {
  FakeEngine engine;
  auto scheduler = Scheduler::Create(options(8, absl::Milliseconds(1)), engine.runner(), nullptr);
  ASSERT_TRUE(scheduler.ok());
  auto first = (*scheduler)->Submit({{1, 2}, {3, 4, 5}}, {}, kNoDeadline);
  auto second = (*scheduler)->Submit({{6}, {7, 8}, {9, 10, 11}}, {}, kNoDeadline);
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_TRUE((*first)->WaitUntil(absl::Now() + absl::Seconds(10)));
  ASSERT_TRUE((*second)->WaitUntil(absl::Now() + absl::Seconds(10)));
  const auto a = (*first)->TakeResults();
  const auto b = (*second)->TakeResults();
  EXPECT_EQ(a[0][0].tokens, (std::vector<int32_t>{2, 1}));
  EXPECT_EQ(a[1][0].tokens, (std::vector<int32_t>{5, 4, 3}));
  EXPECT_EQ(b[0][0].tokens, (std::vector<int32_t>{6}));
  EXPECT_EQ(b[2][0].tokens, (std::vector<int32_t>{11, 10, 9}));
}

TEST(Scheduler, FullBatchIsDispatchedWithoutWaitingForTheDelay) {
  FakeEngine engine;
  // A ten-minute delay: only a full batch can go before the test times out.
  auto scheduler = Scheduler::Create(options(2, absl::Minutes(10)), engine.runner(), nullptr);
  ASSERT_TRUE(scheduler.ok());
  auto job = (*scheduler)->Submit({{1}, {2}}, {}, kNoDeadline);
  ASSERT_TRUE(job.ok());
  EXPECT_TRUE((*job)->WaitUntil(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(engine.batches().size(), 1u);
}

TEST(Scheduler, FullQueueRefusesAtOnce) {
  FakeEngine engine;
  engine.block();
  auto scheduler = Scheduler::Create(options(1, absl::ZeroDuration(), 3), engine.runner(), nullptr);
  ASSERT_TRUE(scheduler.ok());
  auto running = (*scheduler)->Submit({{1}}, {}, kNoDeadline);  // taken by the engine
  engine.wait_started();
  auto queued = (*scheduler)->Submit({{2}, {3}}, {}, kNoDeadline);
  ASSERT_TRUE(queued.ok());
  auto refused = (*scheduler)->Submit({{4}, {5}}, {}, kNoDeadline);  // 2 + 2 > 3
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("2 of 3 sentences"), std::string::npos);
  EXPECT_TRUE((*scheduler)->Submit({{6}}, {}, kNoDeadline).ok());  // one still fits
  engine.release();
  EXPECT_TRUE((*queued)->WaitUntil(absl::Now() + absl::Seconds(10)));
}

// A scheduler whose engine is busy with a first job (blocked until release()), so that what
// is submitted next stays in the queue.
class BusyEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_.block();
    auto scheduler = Scheduler::Create(options(1, absl::ZeroDuration()), engine_.runner(), nullptr);
    ASSERT_TRUE(scheduler.ok());
    scheduler_ = *std::move(scheduler);
    auto running = scheduler_->Submit({{1}}, {}, kNoDeadline);
    ASSERT_TRUE(running.ok());
    running_ = *running;
    engine_.wait_started();
  }
  // Lets the first job finish, drains the scheduler and tells whether `token` reached the engine.
  bool engine_saw_after_drain(int32_t token) {
    engine_.release();
    EXPECT_TRUE(running_->WaitUntil(absl::Now() + absl::Seconds(10)));
    scheduler_.reset();  // drains and joins
    for (const auto& batch : engine_.batches()) {
      for (const auto& source : batch) {
        if (source[0] == token) return true;
      }
    }
    return false;
  }
  FakeEngine engine_;
  std::unique_ptr<Scheduler> scheduler_;
  std::shared_ptr<TranslationJob> running_;
};

TEST_F(BusyEngine, CancelledJobLeavesTheQueueAndNeverRuns) {
  auto cancelled = scheduler_->Submit({{42}, {43}}, {}, kNoDeadline);
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(scheduler_->queue_depth(), 2);
  scheduler_->Cancel(*cancelled, absl::CancelledError("client went away"));
  EXPECT_EQ(scheduler_->queue_depth(), 0);
  ASSERT_TRUE((*cancelled)->WaitUntil(absl::Now()));
  EXPECT_EQ((*cancelled)->status().code(), absl::StatusCode::kCancelled);
  EXPECT_FALSE(engine_saw_after_drain(42));
}

TEST_F(BusyEngine, WorkPastItsDeadlineIsDroppedBeforeTheEngine) {
  auto late = scheduler_->Submit({{77}}, {}, absl::Now() + absl::Milliseconds(20));
  ASSERT_TRUE(late.ok());
  absl::SleepFor(absl::Milliseconds(40));
  engine_.release();
  ASSERT_TRUE((*late)->WaitUntil(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ((*late)->status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(engine_saw_after_drain(77));
}

TEST(Scheduler, ShutdownDrainsQueuedWorkAndRefusesNewWork) {
  FakeEngine engine;
  auto scheduler = Scheduler::Create(options(8, absl::Minutes(10)), engine.runner(), nullptr);
  ASSERT_TRUE(scheduler.ok());
  auto job = (*scheduler)->Submit({{1}, {2}, {3}}, {}, kNoDeadline);
  ASSERT_TRUE(job.ok());
  (*scheduler)->Shutdown();  // the ten-minute delay no longer applies
  EXPECT_TRUE((*job)->WaitUntil(absl::Now() + absl::Seconds(10)));
  EXPECT_TRUE((*job)->status().ok());
  auto refused = (*scheduler)->Submit({{4}}, {}, kNoDeadline);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
}

TEST(Scheduler, BadOptionsAreRefused) {
  FakeEngine engine;
  EXPECT_FALSE(Scheduler::Create(options(0, absl::ZeroDuration()), engine.runner(), nullptr).ok());
  EXPECT_FALSE(Scheduler::Create(options(1, absl::ZeroDuration(), 0), engine.runner(), nullptr).ok());
}

}  // namespace
}  // namespace xlate::server
