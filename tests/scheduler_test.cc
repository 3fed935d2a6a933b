// The scheduler with a fake engine: results reach their request in order, a full queue refuses
// at once, cancelled and expired work never reaches the engine, full batches do not wait.
#include <algorithm>
#include <atomic>
#include <limits>
#include <thread>

#include <gtest/gtest.h>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "server/scheduler.h"

namespace xlate::server {
namespace {

// A fake engine: the hypothesis of a source is the source reversed; a sentence decodes for as
// many steps as its first token says, or until finish() when that token is 0; a negative first
// token fails the sentence (ResourceExhausted) after one step. Admitted with
// report_stable_prefixes, a sentence reports after each step that does not finish it the first
// `steps taken` tokens of its hypothesis as its stable prefix. `slots` sentences decode at
// once. Optionally blocks each admission until released, and records what it saw.
class FakeEngine : public StreamingEngine {
 public:
  // cache_blocks: the KV cache's cap, in blocks; a sentence reserves one per source token.
  explicit FakeEngine(int slots = 64,
                      int64_t cache_blocks = std::numeric_limits<int64_t>::max())
      : slots_(slots), cache_blocks_(cache_blocks) {}
  int free_slots() const override { return slots_ - static_cast<int>(live_.size()); }
  int live_sentences() const override { return static_cast<int>(live_.size()); }
  absl::StatusOr<std::vector<int64_t>> Admit(const std::vector<std::vector<int32_t>>& sources,
                                             const std::vector<TranslationOptions>& options,
                                             const std::vector<Constraints>& constraints) override {
    {
      absl::MutexLock lock(&mutex_);
      batches_.push_back(sources);
      batch_options_.push_back(options);
      batch_constraints_.push_back(constraints);
      reporting_batches_ += std::any_of(options.begin(), options.end(), [](const auto& o) {
        return o.report_stable_prefixes;
      });
    }
    if (!started_.HasBeenNotified()) started_.Notify();  // admissions run on one thread
    if (blocking_) release_.WaitForNotification();
    int64_t blocks = 0;
    for (const auto& source : sources) blocks += static_cast<int64_t>(source.size());
    if (blocks > CacheBlocksFree()) {
      return absl::ResourceExhaustedError("fake: the KV cache cannot hold these sentences");
    }
    std::vector<int64_t> handles;
    for (size_t i = 0; i < sources.size(); ++i) {
      const std::vector<int32_t>& source = sources[i];
      const int steps = source.empty() || source.front() < 0 ? 1 : source.front();
      live_.push_back({next_handle_, steps, std::vector<int32_t>(source.rbegin(), source.rend()),
                       options[i].report_stable_prefixes});
      cache_reserved_ += static_cast<int64_t>(source.size());
      handles.push_back(next_handle_++);
    }
    return handles;
  }
  int64_t CacheBlocksFor(int64_t source_tokens, const TranslationOptions&, bool) const override {
    return source_tokens;
  }
  int64_t CacheBlocksFree() const override { return cache_blocks_ - cache_reserved_; }
  int64_t CacheBlocksCap() const override { return cache_blocks_; }
  std::vector<Finished> Step() override {
    std::vector<Finished> finished;
    for (size_t i = 0; i < live_.size();) {
      Sentence& sentence = live_[i];
      const bool done = sentence.steps_left == 0 ? finish_.load() : --sentence.steps_left == 0;
      ++sentence.steps_taken;
      if (!done) {
        if (sentence.reports) {
          const size_t stable = std::min<size_t>(sentence.steps_taken, sentence.output.size());
          progress_.push_back({sentence.handle, std::vector<int32_t>(
                                                    sentence.output.begin(),
                                                    sentence.output.begin() +
                                                        static_cast<std::ptrdiff_t>(stable))});
        }
        ++i;
        continue;
      }
      if (sentence.output.back() < 0) {
        finished.push_back({sentence.handle, {}, absl::ResourceExhaustedError("fake: no memory")});
      } else {
        finished.push_back(
            {sentence.handle, {Hypothesis{sentence.output, 0.f, 0.f, {}}}, absl::OkStatus()});
      }
      cache_reserved_ -= static_cast<int64_t>(sentence.output.size());
      live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(i));
    }
    return finished;
  }
  std::vector<Progress> TakeProgress() override { return std::move(progress_); }
  int Drop(const std::vector<int64_t>& handles) override {
    int dropped = 0;
    for (int64_t handle : handles) {
      const auto live = std::find_if(live_.begin(), live_.end(),
                                     [&](const Sentence& s) { return s.handle == handle; });
      if (live == live_.end()) continue;
      cache_reserved_ -= static_cast<int64_t>(live->output.size());
      live_.erase(live);
      ++dropped;
      absl::MutexLock lock(&mutex_);
      dropped_.push_back(handle);
    }
    return dropped;
  }
  std::vector<int64_t> dropped() {
    absl::MutexLock lock(&mutex_);
    return dropped_;
  }
  void block() { blocking_ = true; }
  void release() {
    if (!release_.HasBeenNotified()) release_.Notify();  // only the test thread releases
  }
  void finish() { finish_ = true; }
  void wait_started() { started_.WaitForNotification(); }
  std::vector<std::vector<std::vector<int32_t>>> batches() {
    absl::MutexLock lock(&mutex_);
    return batches_;
  }
  std::vector<std::vector<TranslationOptions>> batch_options() {
    absl::MutexLock lock(&mutex_);
    return batch_options_;
  }
  int reporting_batches() {
    absl::MutexLock lock(&mutex_);
    return reporting_batches_;
  }
  std::vector<std::vector<Constraints>> batch_constraints() {
    absl::MutexLock lock(&mutex_);
    return batch_constraints_;
  }

 private:
  struct Sentence {
    int64_t handle;
    int steps_left;
    std::vector<int32_t> output;
    bool reports;
    int steps_taken = 0;
  };
  const int slots_;
  const int64_t cache_blocks_;
  std::atomic<int64_t> cache_reserved_{0};
  std::vector<Sentence> live_;  // scheduler thread only
  std::vector<Progress> progress_;  // scheduler thread only
  int64_t next_handle_ = 0;
  absl::Mutex mutex_;
  std::vector<std::vector<std::vector<int32_t>>> batches_;
  std::vector<std::vector<TranslationOptions>> batch_options_;  // per sentence, as batches_
  std::vector<std::vector<Constraints>> batch_constraints_;  // likewise
  std::vector<int64_t> dropped_;
  int reporting_batches_ = 0;
  std::atomic<bool> blocking_{false}, finish_{false};
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
  auto scheduler = Scheduler::Create(options(8, absl::Milliseconds(1)), &engine, nullptr);
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

// A streaming job's progress reaches each sentence in order — its stable prefixes as they grow,
// then its whole translation — and all of it comes before the job's DoneCallback. A job without
// a progress callback does not ask the engine for stable prefixes.
TEST(Scheduler, ProgressReachesItsSentenceInOrderBeforeTheJobIsDone) {
  FakeEngine engine;
  auto scheduler = Scheduler::Create(options(8, absl::Milliseconds(1)), &engine, nullptr);
  ASSERT_TRUE(scheduler.ok());
  struct Call {
    size_t sentence;  // SIZE_MAX: the DoneCallback
    std::vector<int32_t> tokens;
    bool complete;
  };
  absl::Mutex mutex;
  std::vector<Call> calls;
  absl::Notification done;
  auto job = (*scheduler)->Submit(
      {{3, 7, 8}, {2, 5}}, {}, kNoDeadline,
      [&](absl::Status status, std::vector<std::vector<Hypothesis>>) {
        EXPECT_TRUE(status.ok());
        absl::MutexLock lock(&mutex);
        calls.push_back({SIZE_MAX, {}, true});
        done.Notify();
      },
      [&](size_t sentence, std::vector<int32_t> tokens, bool complete) {
        absl::MutexLock lock(&mutex);
        calls.push_back({sentence, std::move(tokens), complete});
      });
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  absl::MutexLock lock(&mutex);
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back().sentence, SIZE_MAX);
  std::vector<std::vector<std::pair<std::vector<int32_t>, bool>>> by_sentence(2);
  for (const Call& call : calls) {
    if (call.sentence != SIZE_MAX) by_sentence[call.sentence].push_back({call.tokens, call.complete});
  }
  using Steps = std::vector<std::pair<std::vector<int32_t>, bool>>;
  EXPECT_EQ(by_sentence[0], (Steps{{{8}, false}, {{8, 7}, false}, {{8, 7, 3}, true}}));
  EXPECT_EQ(by_sentence[1], (Steps{{{5}, false}, {{5, 2}, true}}));
  EXPECT_EQ(engine.reporting_batches(), 1);

  auto plain = (*scheduler)->Submit({{2, 9}}, {}, kNoDeadline);
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE((*plain)->WaitUntil(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(engine.reporting_batches(), 1);
}

// A request's completion (in the server: detokenising and answering the RPC) runs off the engine
// thread: while one completion is stuck, later requests still decode and finish.
TEST(Scheduler, ASlowCompletionDoesNotHoldUpDecoding) {
  FakeEngine engine;
  auto scheduler = Scheduler::Create(options(8, absl::Milliseconds(1)), &engine, nullptr);
  ASSERT_TRUE(scheduler.ok());
  absl::Notification in_callback, release_callback, callback_done;
  std::vector<std::vector<Hypothesis>> delivered;
  auto slow = (*scheduler)->Submit(
      {{2, 7}}, {}, kNoDeadline,
      [&](absl::Status status, std::vector<std::vector<Hypothesis>> results) {
        EXPECT_TRUE(status.ok()) << status;
        delivered = std::move(results);
        in_callback.Notify();
        release_callback.WaitForNotification();
        callback_done.Notify();
      });
  ASSERT_TRUE(slow.ok());
  ASSERT_TRUE(in_callback.WaitForNotificationWithTimeout(absl::Seconds(10)));
  auto next = (*scheduler)->Submit({{3, 4, 5}}, {}, kNoDeadline);
  ASSERT_TRUE(next.ok());
  // Bounded only so that a regression fails instead of hanging: the engine is free at once.
  EXPECT_TRUE((*next)->WaitUntil(absl::Now() + absl::Seconds(30)));
  EXPECT_FALSE(callback_done.HasBeenNotified());
  release_callback.Notify();
  ASSERT_TRUE(callback_done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_EQ(delivered.size(), 1u);
  EXPECT_EQ(delivered[0][0].tokens, (std::vector<int32_t>{7, 2}));
  EXPECT_EQ((*next)->TakeResults()[0][0].tokens, (std::vector<int32_t>{5, 4, 3}));
}

// Every completion has run once the scheduler is gone (the server destroys the service after it).
TEST(Scheduler, DestructionRunsEveryPendingCompletion) {
  FakeEngine engine;
  std::atomic<int> completed{0};
  {
    auto scheduler = Scheduler::Create(options(8, absl::Minutes(10)), &engine, nullptr);
    ASSERT_TRUE(scheduler.ok());
    // Sentence i decodes i + 1 steps: the completions are posted one after another while the
    // completion thread is busy with the first, and the scheduler is destroyed meanwhile.
    for (int i = 0; i < 5; ++i) {
      auto job = (*scheduler)->Submit({{i + 1, 9}}, {}, kNoDeadline,
                                      [&](absl::Status, std::vector<std::vector<Hypothesis>>) {
                                        absl::SleepFor(absl::Milliseconds(20));
                                        ++completed;
                                      });
      ASSERT_TRUE(job.ok());
    }
  }
  EXPECT_EQ(completed.load(), 5);
}

// An engine step that fails a sentence fails its request with that status (the other
// sentence of the request decodes on, unseen); other requests are not affected.
TEST(Scheduler, ASentenceTheEngineFailsFailsItsRequest) {
  FakeEngine engine;
  auto scheduler = Scheduler::Create(options(8, absl::Milliseconds(1)), &engine, nullptr);
  ASSERT_TRUE(scheduler.ok());
  auto failing = (*scheduler)->Submit({{3, 4}, {-1, 2}}, {}, kNoDeadline);
  auto fine = (*scheduler)->Submit({{2, 6}}, {}, kNoDeadline);
  ASSERT_TRUE(failing.ok() && fine.ok());
  ASSERT_TRUE((*failing)->WaitUntil(absl::Now() + absl::Seconds(10)));
  ASSERT_TRUE((*fine)->WaitUntil(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ((*failing)->status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE((*fine)->status().ok()) << (*fine)->status();
  EXPECT_EQ((*fine)->TakeResults()[0][0].tokens, (std::vector<int32_t>{6, 2}));
}

TEST(Scheduler, FullBatchIsDispatchedWithoutWaitingForTheDelay) {
  FakeEngine engine;
  // A ten-minute delay: only a full batch can go before the test times out.
  auto scheduler = Scheduler::Create(options(2, absl::Minutes(10)), &engine, nullptr);
  ASSERT_TRUE(scheduler.ok());
  auto job = (*scheduler)->Submit({{1}, {2}}, {}, kNoDeadline);
  ASSERT_TRUE(job.ok());
  EXPECT_TRUE((*job)->WaitUntil(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(engine.batches().size(), 1u);
}

// A glossary's constraints travel with their sentence, and sentences with and without them
// (the same options) share one batch.
TEST(Scheduler, ConstraintsTravelWithTheirSentencesInASharedBatch) {
  FakeEngine engine;
  auto scheduler = Scheduler::Create(options(3, absl::Minutes(10)), &engine, nullptr);
  ASSERT_TRUE(scheduler.ok());
  auto plain = (*scheduler)->Submit({{1}}, {}, kNoDeadline);
  auto constrained = (*scheduler)->Submit({{2}, {3}}, {}, kNoDeadline, nullptr, nullptr, "", {},
                                          {Constraints{{7, 8}}, Constraints{}});
  ASSERT_TRUE(plain.ok() && constrained.ok());
  EXPECT_TRUE((*constrained)->WaitUntil(absl::Now() + absl::Seconds(10)));
  ASSERT_EQ(engine.batches().size(), 1u);
  const std::vector<Constraints> expected = {{}, {{7, 8}}, {}};
  EXPECT_EQ(engine.batch_constraints()[0], expected);
  EXPECT_FALSE((*scheduler)->Submit({{1}, {2}}, {}, kNoDeadline, nullptr, nullptr, "", {},
                                    {Constraints{{5}}}).ok());
}

TEST(Scheduler, RequestStartsWhileOthersDecode) {
  FakeEngine engine;
  auto scheduler = Scheduler::Create(options(8, absl::ZeroDuration()), &engine, nullptr);
  ASSERT_TRUE(scheduler.ok());
  auto long_job = (*scheduler)->Submit({{0}}, {}, kNoDeadline);  // decodes until finish()
  ASSERT_TRUE(long_job.ok());
  engine.wait_started();
  auto short_job = (*scheduler)->Submit({{3}}, {}, kNoDeadline);
  ASSERT_TRUE(short_job.ok());
  EXPECT_TRUE((*short_job)->WaitUntil(absl::Now() + absl::Seconds(10)));
  EXPECT_FALSE((*long_job)->WaitUntil(absl::Now()));  // still decoding
  engine.finish();
  EXPECT_TRUE((*long_job)->WaitUntil(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ((*short_job)->TakeResults()[0][0].tokens, std::vector<int32_t>{3});
}

// A cancelled request's sentences that are decoding leave the decode (and free their slots);
// a request that is still wanted decodes on.
TEST(Scheduler, CancelledSentencesLeaveTheRunningDecode) {
  FakeEngine engine(/*slots=*/2);
  auto scheduler = Scheduler::Create(options(8, absl::ZeroDuration()), &engine, nullptr);
  ASSERT_TRUE(scheduler.ok());
  auto abandoned = (*scheduler)->Submit({{0}, {0}}, {}, kNoDeadline);  // decode until finish()
  ASSERT_TRUE(abandoned.ok());
  engine.wait_started();
  (*scheduler)->Cancel(*abandoned, absl::CancelledError("the client went away"));
  EXPECT_EQ((*abandoned)->status().code(), absl::StatusCode::kCancelled);
  // Both slots free up without finish(): the next request decodes.
  auto next = (*scheduler)->Submit({{2, 5}, {1, 6}}, {}, kNoDeadline);
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE((*next)->WaitUntil(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(engine.dropped(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ((*next)->TakeResults()[1][0].tokens, (std::vector<int32_t>{6, 1}));
}

TEST(Scheduler, NewSentencesWaitForAFreeEngineSlot) {
  FakeEngine engine(/*slots=*/2);
  auto scheduler = Scheduler::Create(options(8, absl::ZeroDuration()), &engine, nullptr);
  ASSERT_TRUE(scheduler.ok());
  auto long_job = (*scheduler)->Submit({{0}, {0}}, {}, kNoDeadline);  // fills both slots
  ASSERT_TRUE(long_job.ok());
  engine.wait_started();
  auto waiting = (*scheduler)->Submit({{3}}, {}, kNoDeadline);
  ASSERT_TRUE(waiting.ok());
  EXPECT_FALSE((*waiting)->WaitUntil(absl::Now() + absl::Milliseconds(100)));
  EXPECT_EQ(engine.batches().size(), 1u);
  engine.finish();
  EXPECT_TRUE((*waiting)->WaitUntil(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(engine.batches().size(), 2u);
}

// A sentence that does not fit in what the KV cache has free waits for the blocks of those
// decoding (the fake engine fails an admission that does not fit); it is never failed for it.
TEST(Scheduler, SentencesWaitForRoomInTheKvCache) {
  FakeEngine engine(/*slots=*/8, /*cache_blocks=*/10);
  auto scheduler = Scheduler::Create(options(8, absl::ZeroDuration()), &engine, nullptr);
  ASSERT_TRUE(scheduler.ok());
  auto first = (*scheduler)->Submit({{0, 1, 1, 1, 1, 1, 1, 1}}, {}, kNoDeadline);  // 8 blocks
  ASSERT_TRUE(first.ok());
  engine.wait_started();
  auto waiting = (*scheduler)->Submit({{2, 1, 1}, {3, 1, 1, 1, 1}}, {}, kNoDeadline);
  ASSERT_TRUE(waiting.ok());
  EXPECT_FALSE((*waiting)->WaitUntil(absl::Now() + absl::Milliseconds(100)));
  ASSERT_EQ(engine.batches().size(), 1u);
  engine.finish();
  ASSERT_TRUE((*waiting)->WaitUntil(absl::Now() + absl::Seconds(10)));
  EXPECT_TRUE((*waiting)->status().ok()) << (*waiting)->status();
  EXPECT_TRUE((*first)->status().ok()) << (*first)->status();
  EXPECT_EQ(engine.CacheBlocksFree(), 10);
}

// One that needs more than the whole cache is refused at once, by name.
TEST(Scheduler, ASentenceLargerThanTheKvCacheIsRefused) {
  FakeEngine engine(/*slots=*/8, /*cache_blocks=*/10);
  auto scheduler = Scheduler::Create(options(8, absl::ZeroDuration()), &engine, nullptr);
  ASSERT_TRUE(scheduler.ok());
  auto refused = (*scheduler)->Submit({{1, 2}, std::vector<int32_t>(11, 1)}, {}, kNoDeadline);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("sentence 2 (11 tokens, beam_size 4) may need 11 "
                                            "KV-cache blocks, more than the server's cap of 10"),
            std::string::npos)
      << refused.status();
  EXPECT_TRUE(engine.batches().empty());
}

// With a cache, a sentence repeated within a request is decoded once, a sentence sent again
// with the same options is answered without the engine (streamed or not: the same answer), and
// one sent with other options decodes.
TEST(Scheduler, TheCacheAnswersRepeatsWithoutDecodingThemAgain) {
  FakeEngine engine;
  Scheduler::Options with_cache = options(8, absl::ZeroDuration());
  with_cache.translation_cache_bytes = 1 << 20;
  auto scheduler = Scheduler::Create(with_cache, &engine, nullptr);
  ASSERT_TRUE(scheduler.ok());
  auto first = (*scheduler)->Submit({{2, 7}, {1, 8}, {2, 7}}, {}, kNoDeadline);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*first)->WaitUntil(absl::Now() + absl::Seconds(10)));
  ASSERT_TRUE((*first)->status().ok()) << (*first)->status();
  const auto decoded = (*first)->TakeResults();
  ASSERT_EQ(decoded.size(), 3u);
  EXPECT_EQ(decoded[0][0].tokens, (std::vector<int32_t>{7, 2}));
  EXPECT_EQ(decoded[2][0].tokens, decoded[0][0].tokens);
  ASSERT_EQ(engine.batches().size(), 1u);
  EXPECT_EQ(engine.batches()[0].size(), 2u);  // the repeat was not decoded

  std::vector<std::pair<size_t, bool>> progress;
  absl::Mutex progress_mutex;
  auto again = (*scheduler)->Submit(
      {{1, 8}, {2, 7}}, {}, kNoDeadline, nullptr,
      [&](size_t sentence, std::vector<int32_t>, bool complete) {
        absl::MutexLock lock(&progress_mutex);
        progress.emplace_back(sentence, complete);
      });
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE((*again)->WaitUntil(absl::Now() + absl::Seconds(10)));
  const auto cached = (*again)->TakeResults();
  EXPECT_EQ(cached[0][0].tokens, decoded[1][0].tokens);
  EXPECT_EQ(cached[1][0].tokens, decoded[0][0].tokens);
  EXPECT_EQ(engine.batches().size(), 1u);  // nothing decoded

  TranslationOptions narrower;
  narrower.beam_size = 2;
  auto other = (*scheduler)->Submit({{2, 7}}, narrower, kNoDeadline);
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE((*other)->WaitUntil(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(engine.batches().size(), 2u);
  scheduler->reset();  // runs every completion posted
  EXPECT_EQ(progress.size(), 2u);
  for (const auto& [sentence, complete] : progress) EXPECT_TRUE(complete) << sentence;
}

Scheduler::Options cached_options() {
  Scheduler::Options result = options(8, absl::ZeroDuration());
  result.translation_cache_bytes = 1 << 20;
  return result;
}

// A sentence already decoding for another request is not decoded again: the second request
// takes the first's result when it comes.
TEST(Scheduler, ASentenceDecodingForAnotherRequestIsDecodedOnce) {
  FakeEngine engine;
  auto scheduler = Scheduler::Create(cached_options(), &engine, nullptr);
  ASSERT_TRUE(scheduler.ok());
  auto first = (*scheduler)->Submit({{0, 5}}, {}, kNoDeadline);  // decodes until finish()
  ASSERT_TRUE(first.ok());
  engine.wait_started();
  auto second = (*scheduler)->Submit({{0, 5}, {1, 9}}, {}, kNoDeadline);
  ASSERT_TRUE(second.ok());
  engine.finish();
  ASSERT_TRUE((*second)->WaitUntil(absl::Now() + absl::Seconds(10)));
  ASSERT_TRUE((*first)->WaitUntil(absl::Now() + absl::Seconds(10)));
  const auto results = (*second)->TakeResults();
  EXPECT_EQ(results[0][0].tokens, (*first)->TakeResults()[0][0].tokens);
  std::vector<std::vector<std::vector<int32_t>>> batches = engine.batches();
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1], (std::vector<std::vector<int32_t>>{{1, 9}}));
}

// When the request a sentence waits on is cancelled, the waiting one is decoded after all.
TEST(Scheduler, AWaitingSentenceDecodesWhenTheOneItWaitedOnIsCancelled) {
  FakeEngine engine;
  auto scheduler = Scheduler::Create(cached_options(), &engine, nullptr);
  ASSERT_TRUE(scheduler.ok());
  auto first = (*scheduler)->Submit({{0, 6}}, {}, kNoDeadline);
  ASSERT_TRUE(first.ok());
  engine.wait_started();
  auto second = (*scheduler)->Submit({{0, 6}}, {}, kNoDeadline);
  ASSERT_TRUE(second.ok());
  (*scheduler)->Cancel(*first, absl::CancelledError("the client went away"));
  EXPECT_TRUE(absl::IsCancelled((*first)->status()));
  // The first leaves the decode before anything finishes (else the second would take its
  // result, as it may).
  for (int waited = 0; engine.dropped().empty() && waited < 10000; ++waited) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  engine.finish();
  ASSERT_TRUE((*second)->WaitUntil(absl::Now() + absl::Seconds(10)));
  ASSERT_TRUE((*second)->status().ok()) << (*second)->status();
  EXPECT_EQ((*second)->TakeResults()[0][0].tokens, (std::vector<int32_t>{6, 0}));
  EXPECT_EQ(engine.batches().size(), 2u);
  EXPECT_EQ(engine.dropped().size(), 1u);
}

TEST(Scheduler, FullQueueRefusesAtOnce) {
  FakeEngine engine;
  engine.block();
  auto scheduler = Scheduler::Create(options(1, absl::ZeroDuration(), 3), &engine, nullptr);
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
    auto scheduler = Scheduler::Create(options(1, absl::ZeroDuration()), &engine_, nullptr);
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
  auto scheduler = Scheduler::Create(options(8, absl::Minutes(10)), &engine, nullptr);
  ASSERT_TRUE(scheduler.ok());
  auto job = (*scheduler)->Submit({{1}, {2}, {3}}, {}, kNoDeadline);
  ASSERT_TRUE(job.ok());
  (*scheduler)->Shutdown();  // the ten-minute delay no longer applies
  EXPECT_TRUE((*job)->WaitUntil(absl::Now() + absl::Seconds(10)));
  EXPECT_TRUE((*job)->status().ok());
  auto refused = (*scheduler)->Submit({{4}}, {}, kNoDeadline);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
}

// Requests whose options differ in any field, alignment and scores included, share admissions,
// and each sentence is admitted with its own request's options, whole (a batch key that copied
// some fields by hand once let a request inherit a neighbour's alignment choice).
TEST(Scheduler, RequestsOfAnyOptionsShareAnAdmissionWithTheirOwnOptions) {
  FakeEngine engine;
  engine.block();
  auto scheduler = Scheduler::Create(options(16, absl::ZeroDuration()), &engine, nullptr);
  ASSERT_TRUE(scheduler.ok());
  auto first = (*scheduler)->Submit({{1, 100}}, {}, kNoDeadline);  // holds the engine
  ASSERT_TRUE(first.ok());
  engine.wait_started();
  std::vector<TranslationOptions> variants(6);
  variants[1].alignment = AlignmentOptions{};
  variants[2].alignment = AlignmentOptions{0, 1};
  variants[3].alignment = AlignmentOptions{0, -1};
  variants[4].return_scores = false;
  variants[5].n_best = 2;
  std::vector<std::shared_ptr<TranslationJob>> jobs;
  for (size_t v = 0; v < variants.size(); ++v) {
    // Two sentences per request, marked with the request's number.
    const int32_t mark = static_cast<int32_t>(v);
    auto job = (*scheduler)->Submit({{1, mark}, {1, mark}}, variants[v], kNoDeadline);
    ASSERT_TRUE(job.ok());
    jobs.push_back(*job);
  }
  engine.release();
  for (const auto& job : jobs) {
    ASSERT_TRUE(job->WaitUntil(absl::Now() + absl::Seconds(10)));
    EXPECT_TRUE(job->status().ok());
  }
  const auto batches = engine.batches();
  const auto admitted_options = engine.batch_options();
  ASSERT_EQ(batches.size(), admitted_options.size());
  // The first admission is the request that held the engine; the twelve waiting sentences,
  // of six sets of options, come in together.
  ASSERT_EQ(batches.size(), 2u);
  ASSERT_EQ(batches[1].size(), 12u);
  ASSERT_EQ(admitted_options[1].size(), 12u);
  std::vector<int> sentences_seen(variants.size());
  for (size_t i = 0; i < batches[1].size(); ++i) {
    const size_t v = static_cast<size_t>(batches[1][i][1]);
    ++sentences_seen[v];
    EXPECT_TRUE(admitted_options[1][i] == variants[v]) << "request " << v << ", sentence " << i;
  }
  for (int seen : sentences_seen) EXPECT_EQ(seen, 2);
}

// A client with one sentence, queued behind another client's flood, is admitted in the next
// batch, not after the flood (fair queuing over clients); a client past its share of the queue
// is refused, naming the limit, while others are still taken.
TEST(Scheduler, ClientsShareTheEngineFairly) {
  FakeEngine engine;
  engine.block();
  Scheduler::Options fair = options(1, absl::ZeroDuration());
  fair.max_queued_per_client = 30;
  auto scheduler = Scheduler::Create(fair, &engine, nullptr);
  ASSERT_TRUE(scheduler.ok());
  auto blocker = (*scheduler)->Submit({{1, 0}}, {}, kNoDeadline, nullptr, nullptr, "a");
  ASSERT_TRUE(blocker.ok());
  engine.wait_started();
  std::vector<std::shared_ptr<TranslationJob>> jobs;
  for (int i = 0; i < 3; ++i) {  // the flood: 30 sentences, marked 100 + their number
    std::vector<std::vector<int32_t>> sources;
    for (int k = 0; k < 10; ++k) sources.push_back({1, 100 + 10 * i + k});
    auto flood = (*scheduler)->Submit(sources, {}, kNoDeadline, nullptr, nullptr, "a");
    ASSERT_TRUE(flood.ok());
    jobs.push_back(*flood);
  }
  auto over = (*scheduler)->Submit({{1, 999}}, {}, kNoDeadline, nullptr, nullptr, "a");
  ASSERT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(over.status().message().find("--max_queued_sentences_per_client"),
            std::string::npos);
  EXPECT_NE(over.status().message().find("30"), std::string::npos);
  auto light = (*scheduler)->Submit({{1, 7}}, {}, kNoDeadline, nullptr, nullptr, "b");
  ASSERT_TRUE(light.ok());
  jobs.push_back(*light);
  engine.release();
  for (const auto& job : jobs) ASSERT_TRUE(job->WaitUntil(absl::Now() + absl::Seconds(10)));
  const auto batches = engine.batches();
  ASSERT_EQ(batches.size(), 32u);  // the blocker, the flood, the light client's, one each
  size_t light_batch = 0;
  for (size_t b = 0; b < batches.size(); ++b) {
    if (batches[b][0][1] == 7) light_batch = b;
  }
  // Client b's sentence starts at virtual time 0 as the flood's first does: it goes second.
  EXPECT_LE(light_batch, 2u);
  // The flood's own sentences keep their order.
  int32_t last = 0;
  for (const auto& batch : batches) {
    if (batch[0][1] < 100) continue;
    EXPECT_GT(batch[0][1], last);
    last = batch[0][1];
  }
}

// A light client's sentence, sent while a flood decodes (and waits), decodes in the express
// engine at once and is answered while the flood's sentences are still decoding; the flood's
// own sentences never go there (its client has sentences decoding in the main engine).
TEST(Scheduler, ALightClientDecodesInTheExpressEngineWhileAFloodDecodes) {
  FakeEngine main(/*slots=*/2), express(/*slots=*/2);
  main.block();
  auto scheduler = Scheduler::Create(options(8, absl::Milliseconds(1)), &main, nullptr,
                                     absl::Now, &express);
  ASSERT_TRUE(scheduler.ok());
  std::vector<std::vector<int32_t>> flood_sources;
  for (int k = 0; k < 6; ++k) flood_sources.push_back({0, 100 + k});  // decode until finish()
  auto flood = (*scheduler)->Submit(flood_sources, {}, kNoDeadline, nullptr, nullptr, "a");
  ASSERT_TRUE(flood.ok());
  main.wait_started();
  auto light = (*scheduler)->Submit({{3, 7}}, {}, kNoDeadline, nullptr, nullptr, "b");
  ASSERT_TRUE(light.ok());
  main.release();
  ASSERT_TRUE((*light)->WaitUntil(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ((*light)->TakeResults()[0][0].tokens, (std::vector<int32_t>{7, 3}));
  EXPECT_FALSE((*flood)->WaitUntil(absl::Now()));
  EXPECT_EQ(express.batches(), (std::vector<std::vector<std::vector<int32_t>>>{{{3, 7}}}));
  main.finish();
  ASSERT_TRUE((*flood)->WaitUntil(absl::Now() + absl::Seconds(10)));
  for (const auto& batch : main.batches()) {
    for (const auto& source : batch) EXPECT_NE(source[1], 7);
  }
  EXPECT_EQ(express.batches().size(), 1u);
}

// A light client that never stops (its sentence decodes until finish()) slows the main engine
// but cannot stop it: after express steps worth kExpressTimeShare of the main engine's last
// step, the main engine steps. The clock moves 1 ms per reading, so every step takes 1 ms.
TEST(Scheduler, TheMainEngineKeepsItsShareWhileTheExpressEngineIsBusy) {
  FakeEngine main(/*slots=*/2), express(/*slots=*/1);
  main.block();
  std::atomic<int64_t> readings{0};
  const auto clock = [&readings] { return absl::UnixEpoch() + absl::Milliseconds(++readings); };
  auto scheduler = Scheduler::Create(options(8, absl::ZeroDuration()), &main, nullptr, clock,
                                     &express);
  ASSERT_TRUE(scheduler.ok());
  auto flood = (*scheduler)->Submit({{20, 1}, {20, 2}}, {}, kNoDeadline, nullptr, nullptr, "a");
  ASSERT_TRUE(flood.ok());
  main.wait_started();
  auto light = (*scheduler)->Submit({{0, 7}}, {}, kNoDeadline, nullptr, nullptr, "b");
  ASSERT_TRUE(light.ok());
  main.release();
  ASSERT_TRUE((*flood)->WaitUntil(absl::Now() + absl::Seconds(10)));
  EXPECT_FALSE((*light)->WaitUntil(absl::Now()));
  EXPECT_EQ(express.batches().size(), 1u);
  express.finish();
  ASSERT_TRUE((*light)->WaitUntil(absl::Now() + absl::Seconds(10)));
}

// What the scheduler reports of its queue depth, in order.
class DepthRecorder : public SchedulerObserver {
 public:
  void on_batch(int, int64_t) override {}
  void on_generated(int64_t) override {}
  void on_queue_wait(absl::Duration) override {}
  void on_dropped(int64_t) override {}
  void on_queue_depth(int64_t sentences) override {
    absl::MutexLock lock(&mutex_);
    depths_.push_back(sentences);
  }
  std::vector<int64_t> depths() {
    absl::MutexLock lock(&mutex_);
    return depths_;
  }

 private:
  absl::Mutex mutex_;
  std::vector<int64_t> depths_;
};

// The queue depth reported while the engine decodes is the queue's (a step with nothing to
// admit once reported 0 while sentences waited): with one engine slot and no arrivals, the
// depth only falls.
TEST(Scheduler, QueueDepthIsReportedTrueWhileTheEngineDecodes) {
  FakeEngine engine(/*slots=*/1);
  DepthRecorder recorder;
  {
    auto scheduler = Scheduler::Create(options(1, absl::ZeroDuration()), &engine, &recorder);
    ASSERT_TRUE(scheduler.ok());
    auto job = (*scheduler)->Submit({{3, 1}, {3, 2}, {3, 3}, {3, 4}}, {}, kNoDeadline);
    ASSERT_TRUE(job.ok());
    ASSERT_TRUE((*job)->WaitUntil(absl::Now() + absl::Seconds(10)));
  }
  const std::vector<int64_t> depths = recorder.depths();
  ASSERT_FALSE(depths.empty());
  EXPECT_EQ(depths.front(), 4);
  for (size_t i = 1; i < depths.size(); ++i) {
    EXPECT_LE(depths[i], depths[i - 1]) << "report " << i;
  }
  EXPECT_EQ(depths.back(), 0);
}

// The whole-struct comparison the batch key rests on sees every field.
TEST(Scheduler, TranslationOptionsCompareEveryField) {
  const TranslationOptions plain;
  std::vector<TranslationOptions> changed(12, plain);
  changed[0].beam_size = 5;
  changed[1].length_penalty = 0.7f;
  changed[2].max_extra_length = 10;
  changed[3].max_output_length = 9;
  changed[4].min_output_length = 2;
  changed[5].n_best = 2;
  changed[6].max_batch_size = 4;
  changed[7].workers = 2;
  changed[8].return_scores = false;
  changed[9].report_stable_prefixes = true;
  changed[10].alignment = AlignmentOptions{};
  changed[11].forced_start_tokens = {7};
  for (size_t i = 0; i < changed.size(); ++i) {
    EXPECT_FALSE(changed[i] == plain) << "field " << i;
  }
  TranslationOptions other_head = changed[10];
  other_head.alignment->head = 0;
  EXPECT_FALSE(other_head == changed[10]);
  EXPECT_TRUE(TranslationOptions(plain) == plain);
}

TEST(Scheduler, BadOptionsAreRefused) {
  FakeEngine engine;
  EXPECT_FALSE(Scheduler::Create(options(0, absl::ZeroDuration()), &engine, nullptr).ok());
  EXPECT_FALSE(Scheduler::Create(options(1, absl::ZeroDuration(), 0), &engine, nullptr).ok());
}

}  // namespace
}  // namespace xlate::server
