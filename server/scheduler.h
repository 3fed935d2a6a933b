// The request scheduler between the RPC threads and the engine. Sentences of all requests enter
// one bounded queue; one scheduler thread owns the engine, forms batches with decide_batch()
// (server/batching_policy.h) and routes each result back to its request and position. That
// thread only decodes: a request's completion callback (detokenising, answering the RPC) runs on
// the scheduler's completion thread (server/task_threads.h).
//
// Batching is iteration-level: the engine decodes all admitted sentences together one token per
// step, and between two steps the scheduler admits a new batch into the engine's free slots, so
// a request that arrives while others decode starts at the next step, and each sentence's
// result is delivered the step its search ends.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/continuous_decoder.h"
#include "engine/decoding/search.h"
#include "engine/translator.h"
#include "server/batching_policy.h"
#include "server/task_threads.h"
#include "server/translation_cache.h"

namespace xlate::server {

// The engine as the scheduler drives it (ContinuousDecoder in the server); used by the
// scheduler thread only.
class StreamingEngine {
 public:
  virtual ~StreamingEngine() = default;
  // Sentences that can still be admitted, and sentences decoding.
  virtual int free_slots() const = 0;
  virtual int live_sentences() const = 0;
  // Admits sentences (token ids), options[i] for sentence i, and, when `constraints` is not
  // empty, each sentence's lexical constraints (ContinuousDecoder::Admit); returns a handle per
  // sentence.
  virtual absl::StatusOr<std::vector<int64_t>> Admit(
      const std::vector<std::vector<int32_t>>& sources,
      const std::vector<TranslationOptions>& options,
      const std::vector<Constraints>& constraints) = 0;
  // A finished sentence (a failed one fails its request) and a stable prefix, as the
  // continuous decoder gives them: nothing is repackaged on its way to the scheduler.
  using Finished = ContinuousDecoder::Finished;
  using Progress = ContinuousDecoder::Progress;
  // One decoding step of every live sentence; returns those that finished.
  virtual std::vector<Finished> Step() = 0;
  // The stable prefixes that grew since the last call, of live sentences admitted with
  // options.report_stable_prefixes (ContinuousDecoder::TakeProgress).
  virtual std::vector<Progress> TakeProgress() = 0;
  // Drops live sentences (nobody waits for their results) before the next step; handles that
  // are no longer live are ignored. Returns how many were dropped.
  virtual int Drop(const std::vector<int64_t>& handles) = 0;

  // The KV cache (engine/kv_cache_pool.h), in blocks: what a sentence of `source_tokens` tokens
  // (end token excluded) with `options` reserves when admitted
  // (ContinuousDecoder::cache_blocks_for), what is free to reserve now, and the cap. The
  // scheduler admits sentences while they fit and refuses at once one larger than the cap. An
  // engine whose cache never limits admission keeps these defaults. CacheBlocksFor may be
  // called from any thread.
  virtual int64_t CacheBlocksFor(int64_t /*source_tokens*/, const TranslationOptions& /*options*/,
                                 bool /*constrained*/) const {
    return 0;
  }
  virtual int64_t CacheBlocksFree() const { return std::numeric_limits<int64_t>::max(); }
  virtual int64_t CacheBlocksCap() const { return std::numeric_limits<int64_t>::max(); }
};

// What the scheduler reports, for metrics. Called on the scheduler thread or, for
// queue_depth, on the submitting thread; implementations must be thread-safe.
class SchedulerObserver {
 public:
  virtual ~SchedulerObserver() = default;
  // A batch admitted into the engine.
  virtual void on_batch(int sentences, int64_t padded_tokens) = 0;
  // Target tokens of finished sentences' best hypotheses.
  virtual void on_generated(int64_t tokens) = 0;
  virtual void on_queue_wait(absl::Duration waited) = 0;
  // Called with the queue's lock held (reports arrive in the order the queue changed): it must
  // not call into the scheduler.
  virtual void on_queue_depth(int64_t sentences) = 0;
  // Sentences dropped from the running decode because their request was cancelled.
  virtual void on_dropped(int64_t sentences) = 0;
  // The KV cache after a decoding step (engine/kv_cache_pool.h: blocks taken, blocks the pool
  // holds, its bytes and its cap in bytes); reported by the engine, on the scheduler thread.
  virtual void on_kv_cache(int64_t /*blocks_in_use*/, int64_t /*blocks_in_pool*/,
                           int64_t /*pool_bytes*/, int64_t /*cap_bytes*/) {}
  // The translation cache (server/translation_cache.h): sentences of a request answered without
  // decoding (found in it, or repeating a sentence earlier in the request) and sentences queued
  // to decode; after a result is stored, the cache's bytes and the entries that made room.
  virtual void on_translation_cache_lookups(int64_t /*hits*/, int64_t /*misses*/) {}
  virtual void on_translation_cache_stored(int64_t /*bytes*/, int64_t /*evicted*/) {}
};

// The sentences of one request, shared by whoever waits for it and the scheduler thread that
// fills in results.
class TranslationJob {
 public:
  // Called exactly once, when the job is done (all results in, or failed), on the thread that
  // completed it, with no lock held: OK and one entry per sentence, or the failure.
  using DoneCallback =
      std::function<void(absl::Status, std::vector<std::vector<Hypothesis>> results)>;

  // Called, while the job is not done, when a sentence's translation grows: `tokens` is its
  // stable prefix (complete false), or its best translation once it is done (complete true).
  // A sentence's calls come in order, all before the job's DoneCallback.
  using ProgressCallback =
      std::function<void(size_t sentence, std::vector<int32_t> tokens, bool complete)>;

  TranslationJob(size_t sentences, DoneCallback on_done, ProgressCallback on_progress = nullptr);
  // Blocks until the job is done (all results in, or failed) or `until` passes.
  // Returns whether it is done.
  bool WaitUntil(absl::Time until);
  // Valid once done: OK and one entry per sentence, or the failure.
  absl::Status status() const;
  std::vector<std::vector<Hypothesis>> TakeResults();

 private:
  friend class Scheduler;
  // Delivers sentence `index` and the sentences that repeat it (repeats_).
  void Deliver(size_t index, std::vector<Hypothesis> hypotheses);
  void Fail(absl::Status status);  // the first failure wins
  bool done() const;
  void Progress(size_t index, std::vector<int32_t> stable_tokens);
  mutable absl::Mutex mutex_;
  DoneCallback on_done_ ABSL_GUARDED_BY(mutex_);
  // Called with mutex_ held, so that none comes after the job is done (it only hands over).
  const ProgressCallback on_progress_;
  std::vector<std::vector<Hypothesis>> results_ ABSL_GUARDED_BY(mutex_);
  // A sentence's later repeats in the request, which take its result (set before the job is
  // queued; the translation cache's scheduler decodes a repeated sentence once).
  std::map<size_t, std::vector<size_t>> repeats_;
  size_t remaining_ ABSL_GUARDED_BY(mutex_);
  absl::Status status_ ABSL_GUARDED_BY(mutex_);
  bool done_ ABSL_GUARDED_BY(mutex_) = false;
};

class Scheduler {
 public:
  struct Options {
    BatchingLimits limits;
    int64_t queue_capacity = 4096;  // sentences waiting, over all requests
    // Sentences one client may have waiting (0 = queue_capacity): past it its requests get
    // RESOURCE_EXHAUSTED, so that one client's flood cannot fill the queue for everyone.
    int64_t max_queued_per_client = 0;
    // Bytes of the translation cache (server/translation_cache.h); 0 = none. With a cache, a
    // sentence found there is answered at once, and a sentence already queued or decoding for
    // any request (or repeated within its request) is decoded once: it takes that one's result.
    int64_t translation_cache_bytes = 0;
    // The cache's partitions: one per client (Submit's `client`: an API key when keys are on),
    // or one shared by all.
    bool translation_cache_per_client = false;
  };
  // `clock` returns the current time (tests may pass a fake). `engine` must outlive the
  // scheduler; `observer` may be null and must outlive it too.
  //
  // `express` (may be null; else it must outlive the scheduler too) is a second, small engine
  // for light clients: while the main engine decodes, the sentences of a client with none of
  // its own decoding there and at most express->free_slots() + live ones waiting go to the
  // express engine at once (no queue delay), and the scheduler steps it first. A decoding
  // step costs more the more rows it holds, so a one-sentence call under another client's
  // flood then decodes at about its idle pace instead of the flood's. The main engine still
  // gets a step after at most kExpressTimeShare times its last step's time of express steps,
  // so a stream of light calls slows a flood by at most that share instead of stopping it.
  static constexpr int kExpressTimeShare = 4;
  static absl::StatusOr<std::unique_ptr<Scheduler>> Create(
      const Options& options, StreamingEngine* engine, SchedulerObserver* observer,
      std::function<absl::Time()> clock = absl::Now, StreamingEngine* express = nullptr);
  // Finishes queued work (as Shutdown) and joins the scheduler thread.
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues the sentences of one request from `client` (who sent it: an API key or a peer; the
  // engine is shared fairly between clients, PendingSentence::fair_start). RESOURCE_EXHAUSTED
  // at once when they do not fit in the queue or in the client's share of it; UNAVAILABLE
  // after Shutdown. On success the scheduler holds the sentences until
  // they are translated, their deadline passes (the job fails with DEADLINE_EXCEEDED) or the
  // job is cancelled.
  // `on_done` (may be empty) is called once when the job is done, on the completion thread;
  // with a failed Submit it is never called. `on_progress` (may be empty: the engine then
  // computes no stable prefixes) is called on the completion thread too, as the sentences'
  // translations grow, before on_done. Every call has run when the scheduler is destroyed.
  // `forced_starts`: empty, or one per source: target tokens forced after
  // options.forced_start_tokens at the start of that sentence's output (a target prefix).
  // Sentences of any options share batches, each decoded with its own. A sentence that needs
  // more KV cache than the engine's cap fails the Submit (RESOURCE_EXHAUSTED, with the sizes);
  // one that does not fit now waits in the queue until blocks return.
  // `constraints`: empty, or one per source: its lexical constraints (a glossary's target
  // terms); sentences with and without them share batches.
  absl::StatusOr<std::shared_ptr<TranslationJob>> Submit(
      std::vector<std::vector<int32_t>> sources, TranslationOptions options,
      absl::Time deadline, TranslationJob::DoneCallback on_done = nullptr,
      TranslationJob::ProgressCallback on_progress = nullptr, const std::string& client = "",
      const std::vector<std::vector<int32_t>>& forced_starts = {},
      std::vector<Constraints> constraints = {});
  // Removes the job's queued sentences and fails it with `status` (nobody waits for it); its
  // sentences already decoding leave the decode before the engine's next step.
  void Cancel(const std::shared_ptr<TranslationJob>& job, absl::Status status);
  // Refuses new work; what is queued is still translated, without waiting for batches to fill.
  void Shutdown();
  int64_t queue_depth() const;

 private:
  struct QueuedSentence {
    std::shared_ptr<TranslationJob> job;
    size_t index;  // position within the job's request
    std::vector<int32_t> source;
    TranslationOptions options;
    std::string client;
    Constraints constraints;
    int64_t cache_blocks;  // StreamingEngine::CacheBlocksFor
    std::shared_ptr<const TranslationCache::Key> cached_as;  // null: not stored
  };
  // A client with sentences waiting: how many, and where its last one ends in virtual time.
  struct ClientShare {
    int64_t queued = 0;
    double fair_end = 0;
  };
  // Where an admitted sentence's result goes.
  struct Destination {
    std::shared_ptr<TranslationJob> job;
    size_t index;
    std::string client;
    std::shared_ptr<const TranslationCache::Key> cached_as;  // where its result is stored
  };
  // An engine and the sentences decoding in it, by its handles (engine thread only).
  struct Lane {
    StreamingEngine* engine = nullptr;
    std::map<int64_t, Destination> in_flight;
  };
  Scheduler(const Options& options, StreamingEngine* engine, SchedulerObserver* observer,
            std::function<absl::Time()> clock, StreamingEngine* express);
  void Run();
  // Removes the queue entries at `indices` (ascending) and returns them.
  std::vector<QueuedSentence> TakeLocked(const std::vector<size_t>& indices)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void RemoveJobLocked(const TranslationJob* job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Accounts for queue entry `index` leaving the queue (before it is erased).
  void ForgetQueuedLocked(size_t index) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // A sentence that waits for an identical one queued or decoding for another request (the
  // leader, whose cache key in_progress_ holds), to take its result.
  struct Follower {
    std::shared_ptr<TranslationJob> job;
    size_t index;
    std::string client;
    absl::Time deadline;
  };
  // The leader of `key` is done: its followers, no longer waiting.
  std::vector<Follower> TakeFollowersLocked(const TranslationCache::Key& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // The leader of `key` left without a result (its request was cancelled or expired): the
  // first follower whose request is still waiting (not `leaving`'s) is queued as the new
  // leader, the others wait for it.
  void HandOverLocked(const TranslationCache::Key& key, const TranslationJob* leaving)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Delivers a leader's result (or failure) to its followers (engine thread, no lock held).
  void SettleFollowers(const std::shared_ptr<const TranslationCache::Key>& key,
                       const absl::Status& status, const std::vector<Hypothesis>& hypotheses);
  // The express engine's batch, when it has room and the main engine decodes: the queued
  // sentences of light clients (Create), by the batching policy without a queue delay.
  std::vector<size_t> ExpressBatchLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // The longest prefix of `chosen` (queue indices) whose KV-cache blocks `engine` can reserve
  // now.
  std::vector<size_t> FittingLocked(const StreamingEngine& engine,
                                    std::vector<size_t> chosen) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Admits a batch into a lane's engine (engine thread); failures fail its jobs.
  void AdmitBatch(Lane& lane, std::vector<QueuedSentence> batch, int64_t padded_tokens);
  // One step of a lane's engine; reports the stable prefixes that grew and delivers the
  // sentences that finished (engine thread).
  void StepEngine(Lane& lane);
  // Which lane steps next: the express one while it decodes, unless the main one decodes too
  // and has waited its share (kExpressTimeShare).
  Lane& NextToStep();
  // The main lane's sentences of `clients` (one entry each) no longer decode.
  void ForgetDecoding(Lane& lane, const std::vector<std::string>& clients);
  // Drops the decoding sentences of cancelled jobs from the engines (engine thread).
  void DropInFlight(const std::vector<std::shared_ptr<TranslationJob>>& cancelled);
  bool Decoding() const;

  const Options options_;
  Lane main_, express_;  // express_.engine may be null
  // Sentences decoding in the main engine, per client with any; engine thread only, but read
  // under the lock when the express batch is chosen (written under it too).
  std::map<std::string, int> main_decoding_ ABSL_GUARDED_BY(mutex_);
  absl::Duration last_main_step_;        // engine thread only
  absl::Duration express_since_main_;    // engine thread only
  SchedulerObserver* const observer_;
  const std::function<absl::Time()> clock_;
  const std::unique_ptr<TranslationCache> cache_;  // may be null

  mutable absl::Mutex mutex_;
  absl::CondVar wake_;
  // Two views of one queue, index for index: what the policy needs, and what the engine needs.
  std::deque<PendingSentence> pending_ ABSL_GUARDED_BY(mutex_);
  std::deque<QueuedSentence> queued_ ABSL_GUARDED_BY(mutex_);
  // Clients with sentences waiting (an entry goes when its last sentence leaves the queue).
  std::map<std::string, ClientShare> clients_ ABSL_GUARDED_BY(mutex_);
  // With a cache: the keys of the sentences queued or decoding, and who waits for each.
  std::unordered_map<TranslationCache::Key, std::vector<Follower>, TranslationCache::KeyHash>
      in_progress_ ABSL_GUARDED_BY(mutex_);
  // Fair queuing's virtual time, in source tokens: the place of the last batch's first
  // sentence. A client's next sentence starts at the later of this and its previous one's end.
  double virtual_time_ ABSL_GUARDED_BY(mutex_) = 0;
  // Jobs cancelled since the engine thread last looked (their sentences may be decoding).
  std::vector<std::shared_ptr<TranslationJob>> cancelled_ ABSL_GUARDED_BY(mutex_);
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  // Destroyed after thread_ has joined (in ~Scheduler), so it runs every completion posted.
  TaskThreads completions_;
  std::thread thread_;
};

}  // namespace xlate::server
