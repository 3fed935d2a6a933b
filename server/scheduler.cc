#include "server/scheduler.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"

namespace xlate::server {

TranslationJob::TranslationJob(size_t sentences, DoneCallback on_done,
                               ProgressCallback on_progress)
    : on_done_(std::move(on_done)), on_progress_(std::move(on_progress)),
      results_(sentences), remaining_(sentences) {}

bool TranslationJob::WaitUntil(absl::Time until) {
  absl::MutexLock lock(&mutex_);
  return mutex_.AwaitWithDeadline(absl::Condition(&done_), until);
}

absl::Status TranslationJob::status() const {
  absl::MutexLock lock(&mutex_);
  return status_;
}

std::vector<std::vector<Hypothesis>> TranslationJob::TakeResults() {
  absl::MutexLock lock(&mutex_);
  return std::move(results_);
}

void TranslationJob::Deliver(size_t index, std::vector<Hypothesis> hypotheses) {
  DoneCallback callback;
  std::vector<std::vector<Hypothesis>> results;
  {
    absl::MutexLock lock(&mutex_);
    if (done_) return;
    const auto repeats = repeats_.find(index);
    if (repeats != repeats_.end()) {
      for (size_t repeat : repeats->second) {
        if (on_progress_) {
          on_progress_(repeat, hypotheses.empty() ? std::vector<int32_t>() : hypotheses[0].tokens,
                       /*complete=*/true);
        }
        results_[repeat] = hypotheses;
        --remaining_;
      }
    }
    if (on_progress_) {
      on_progress_(index, hypotheses.empty() ? std::vector<int32_t>() : hypotheses[0].tokens,
                   /*complete=*/true);
    }
    results_[index] = std::move(hypotheses);
    if (--remaining_ > 0) return;
    done_ = true;
    if (!on_done_) return;
    callback = std::move(on_done_);
    results = std::move(results_);
  }
  callback(absl::OkStatus(), std::move(results));
}

bool TranslationJob::done() const {
  absl::MutexLock lock(&mutex_);
  return done_;
}

void TranslationJob::Progress(size_t index, std::vector<int32_t> stable_tokens) {
  absl::MutexLock lock(&mutex_);
  if (done_ || !on_progress_) return;
  on_progress_(index, std::move(stable_tokens), /*complete=*/false);
}

void TranslationJob::Fail(absl::Status status) {
  DoneCallback callback;
  {
    absl::MutexLock lock(&mutex_);
    if (done_) return;
    status_ = status;
    done_ = true;
    callback = std::move(on_done_);
  }
  if (callback) callback(std::move(status), {});
}

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(const Options& options,
                                                             StreamingEngine* engine,
                                                             SchedulerObserver* observer,
                                                             std::function<absl::Time()> clock,
                                                             StreamingEngine* express) {
  if (options.queue_capacity < 1) {
    return absl::InvalidArgumentError("queue capacity must be at least 1 sentence");
  }
  if (options.limits.max_batch_sentences < 1 || options.limits.max_batch_tokens < 1) {
    return absl::InvalidArgumentError("max batch sentences and tokens must be at least 1");
  }
  if (options.limits.max_queue_delay < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("max queue delay must not be negative");
  }
  return std::unique_ptr<Scheduler>(
      new Scheduler(options, engine, observer, std::move(clock), express));
}

Scheduler::Scheduler(const Options& options, StreamingEngine* engine, SchedulerObserver* observer,
                     std::function<absl::Time()> clock, StreamingEngine* express)
    : options_(options),
      observer_(observer),
      clock_(std::move(clock)),
      cache_(options.translation_cache_bytes > 0
                 ? std::make_unique<TranslationCache>(options.translation_cache_bytes)
                 : nullptr) {
  main_.engine = engine;
  express_.engine = express;
  thread_ = std::thread([this] { Run(); });
}

Scheduler::~Scheduler() {
  Shutdown();
  thread_.join();
}

absl::StatusOr<std::shared_ptr<TranslationJob>> Scheduler::Submit(
    std::vector<std::vector<int32_t>> sources, TranslationOptions options, absl::Time deadline,
    TranslationJob::DoneCallback on_done, TranslationJob::ProgressCallback on_progress,
    const std::string& client,
    const std::vector<std::vector<int32_t>>& forced_starts, std::vector<Constraints> constraints) {
  if (sources.empty()) return absl::InvalidArgumentError("a job needs at least one sentence");
  if (!forced_starts.empty() && forced_starts.size() != sources.size()) {
    return absl::InvalidArgumentError("forced_starts must be empty or one per source");
  }
  if (!constraints.empty() && constraints.size() != sources.size()) {
    return absl::InvalidArgumentError("constraints must be empty or one per source");
  }
  // The job calls back on whichever thread completes it (the engine thread, mostly); the
  // callback itself runs on the completion thread, so the engine never waits on it.
  TranslationJob::DoneCallback handed_over;
  if (on_done) {
    handed_over = [this, on_done = std::move(on_done)](
                      absl::Status status, std::vector<std::vector<Hypothesis>> results) {
      completions_.Post(
          [on_done, status = std::move(status), results = std::move(results)]() mutable {
            on_done(std::move(status), std::move(results));
          });
    };
  }
  TranslationJob::ProgressCallback progress_handed_over;
  if (on_progress) {
    progress_handed_over = [this, on_progress = std::move(on_progress)](
                               size_t sentence, std::vector<int32_t> tokens, bool complete) {
      completions_.Post([on_progress, sentence, tokens = std::move(tokens), complete]() mutable {
        on_progress(sentence, std::move(tokens), complete);
      });
    };
  }
  options.report_stable_prefixes = static_cast<bool>(progress_handed_over);
  std::vector<TranslationOptions> sentence_options(sources.size(), options);
  std::vector<int64_t> cache_blocks(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    if (!forced_starts.empty() && !forced_starts[i].empty()) {
      std::vector<int32_t>& forced = sentence_options[i].forced_start_tokens;
      forced.insert(forced.end(), forced_starts[i].begin(), forced_starts[i].end());
    }
    const bool constrained = !constraints.empty() && !constraints[i].empty();
    cache_blocks[i] = main_.engine->CacheBlocksFor(static_cast<int64_t>(sources[i].size()),
                                                   sentence_options[i], constrained);
    const int64_t cap = main_.engine->CacheBlocksCap();
    if (cache_blocks[i] > cap) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "sentence ", i + 1, " (", sources[i].size(), " tokens, beam_size ",
          sentence_options[i].beam_size, ") may need ", cache_blocks[i],
          " KV-cache blocks, more than the server's cap of ", cap,
          " (--kv_cache_mib): send a shorter sentence, a narrower beam or a lower "
          "max_extra_length"));
    }
  }
  auto job = std::make_shared<TranslationJob>(sources.size(), std::move(handed_over),
                                              std::move(progress_handed_over));
  // With a cache, what it holds is answered at once, a repeat of an earlier sentence of this
  // request takes that one's result, and only the rest is queued (stored once decoded).
  std::vector<size_t> to_queue;
  std::vector<std::shared_ptr<const TranslationCache::Key>> cached_as(sources.size());
  std::vector<std::pair<size_t, std::vector<Hypothesis>>> found;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (cache_ == nullptr) {
      to_queue.push_back(i);
      continue;
    }
    auto key = std::make_shared<const TranslationCache::Key>(TranslationCache::KeyOf(
        options_.translation_cache_per_client ? client : "", sources[i], sentence_options[i],
        constraints.empty() ? Constraints() : constraints[i]));
    const auto earlier = std::find_if(to_queue.begin(), to_queue.end(),
                                      [&](size_t j) { return *cached_as[j] == *key; });
    if (earlier != to_queue.end()) {
      job->repeats_[*earlier].push_back(i);
    } else if (auto hypotheses = cache_->Find(*key)) {
      found.emplace_back(i, *std::move(hypotheses));
    } else {
      cached_as[i] = std::move(key);
      to_queue.push_back(i);
    }
  }
  int64_t queueing = 0;
  {
    absl::MutexLock lock(&mutex_);
    if (stopping_) return absl::UnavailableError("the server is shutting down");
    // A sentence queued or decoding for another request already: this one waits for it.
    std::vector<size_t> leading, following;
    for (size_t i : to_queue) {
      const bool waits = cached_as[i] != nullptr && in_progress_.count(*cached_as[i]) > 0;
      (waits ? following : leading).push_back(i);
    }
    to_queue = std::move(leading);
    queueing = static_cast<int64_t>(to_queue.size());
    const int64_t free = options_.queue_capacity - static_cast<int64_t>(queued_.size());
    if (queueing > free) {
      return absl::ResourceExhaustedError(
          "the translation queue is full (" + std::to_string(queued_.size()) + " of " +
          std::to_string(options_.queue_capacity) + " sentences waiting); retry later");
    }
    const int64_t client_limit = options_.max_queued_per_client > 0
                                     ? options_.max_queued_per_client
                                     : options_.queue_capacity;
    const auto known = clients_.find(client);
    const int64_t client_queued = known == clients_.end() ? 0 : known->second.queued;
    if (client_queued + queueing > client_limit) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "this client already has ", client_queued, " sentences waiting and sends ",
          queueing, " more; one client may have ", client_limit,
          " waiting (--max_queued_sentences_per_client); retry later"));
    }
    for (size_t i : following) in_progress_[*cached_as[i]].push_back({job, i, client, deadline});
    if (cache_ != nullptr && observer_ != nullptr) {
      observer_->on_translation_cache_lookups(static_cast<int64_t>(sources.size()) - queueing,
                                              queueing);
    }
    if (queueing > 0) {
      const absl::Time now = clock_();
      ClientShare& share = clients_[client];
      double fair_end = std::max(share.fair_end, virtual_time_);
      for (size_t i : to_queue) {
        if (cached_as[i] != nullptr) in_progress_.emplace(*cached_as[i], std::vector<Follower>());
        const int64_t tokens = static_cast<int64_t>(sources[i].size()) + 1;
        pending_.push_back({tokens, now, deadline, fair_end});
        fair_end += static_cast<double>(tokens);
        queued_.push_back({job, i, std::move(sources[i]), std::move(sentence_options[i]), client,
                           constraints.empty() ? Constraints() : std::move(constraints[i]),
                           cache_blocks[i], std::move(cached_as[i])});
      }
      share.queued += queueing;
      share.fair_end = fair_end;
      // Reported under the lock, so that reports arrive in the order the queue changed (one
      // made after it, by the engine thread, once overtook this one and left a stale depth).
      if (observer_) observer_->on_queue_depth(static_cast<int64_t>(queued_.size()));
      wake_.Signal();
    }
  }
  for (auto& [index, hypotheses] : found) job->Deliver(index, std::move(hypotheses));
  return job;
}

void Scheduler::ForgetQueuedLocked(size_t index) {
  const auto share = clients_.find(queued_[index].client);
  if (share != clients_.end() && --share->second.queued <= 0) clients_.erase(share);
}

void Scheduler::RemoveJobLocked(const TranslationJob* job) {
  for (size_t i = queued_.size(); i-- > 0;) {
    if (queued_[i].job.get() == job) {
      // Queued at the back (past i): the loop goes on below i.
      if (queued_[i].cached_as != nullptr) HandOverLocked(*queued_[i].cached_as, job);
      ForgetQueuedLocked(i);
      queued_.erase(queued_.begin() + static_cast<std::ptrdiff_t>(i));
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
}

std::vector<Scheduler::Follower> Scheduler::TakeFollowersLocked(const TranslationCache::Key& key) {
  std::vector<Follower> followers;
  const auto entry = in_progress_.find(key);
  if (entry == in_progress_.end()) return followers;
  followers = std::move(entry->second);
  in_progress_.erase(entry);
  return followers;
}

void Scheduler::HandOverLocked(const TranslationCache::Key& key, const TranslationJob* leaving) {
  std::vector<Follower> followers = TakeFollowersLocked(key);
  const auto next = std::find_if(followers.begin(), followers.end(), [&](const Follower& f) {
    return f.job.get() != leaving && !f.job->done();
  });
  if (next == followers.end()) return;
  const Follower leader = *next;
  followers.erase(followers.begin(), next + 1);
  auto cached_as = std::make_shared<const TranslationCache::Key>(key);
  const bool constrained = !key.constraints.empty();
  const int64_t tokens = static_cast<int64_t>(key.source.size()) + 1;
  ClientShare& share = clients_[leader.client];
  const double fair_start = std::max(share.fair_end, virtual_time_);
  pending_.push_back({tokens, clock_(), leader.deadline, fair_start});
  queued_.push_back({leader.job, leader.index, key.source, key.options, leader.client,
                     key.constraints,
                     main_.engine->CacheBlocksFor(tokens - 1, key.options, constrained),
                     std::move(cached_as)});
  ++share.queued;
  share.fair_end = fair_start + static_cast<double>(tokens);
  in_progress_.emplace(key, std::move(followers));
  wake_.Signal();
}

void Scheduler::SettleFollowers(const std::shared_ptr<const TranslationCache::Key>& key,
                                const absl::Status& status,
                                const std::vector<Hypothesis>& hypotheses) {
  if (key == nullptr) return;
  std::vector<Follower> followers;
  {
    absl::MutexLock lock(&mutex_);
    followers = TakeFollowersLocked(*key);
  }
  for (Follower& follower : followers) {
    if (status.ok()) {
      follower.job->Deliver(follower.index, hypotheses);
    } else {
      follower.job->Fail(status);
    }
  }
}

void Scheduler::Cancel(const std::shared_ptr<TranslationJob>& job, absl::Status status) {
  {
    absl::MutexLock lock(&mutex_);
    RemoveJobLocked(job.get());
    if (observer_) observer_->on_queue_depth(static_cast<int64_t>(queued_.size()));
    cancelled_.push_back(job);
    wake_.Signal();
  }
  job->Fail(std::move(status));
}

void Scheduler::Shutdown() {
  absl::MutexLock lock(&mutex_);
  stopping_ = true;
  wake_.Signal();
}

int64_t Scheduler::queue_depth() const {
  absl::MutexLock lock(&mutex_);
  return static_cast<int64_t>(queued_.size());
}

std::vector<Scheduler::QueuedSentence> Scheduler::TakeLocked(const std::vector<size_t>& indices) {
  std::vector<QueuedSentence> taken;
  // Virtual time moves to the batch's first place (its anchor's), not its last: the batch took
  // sentences close in length from anywhere in the queue.
  double first_place = std::numeric_limits<double>::infinity();
  for (size_t i : indices) {
    first_place = std::min(first_place, pending_[i].fair_start);
    ForgetQueuedLocked(i);
    taken.push_back(std::move(queued_[i]));
  }
  if (!indices.empty()) virtual_time_ = std::max(virtual_time_, first_place);
  for (size_t k = indices.size(); k-- > 0;) {
    queued_.erase(queued_.begin() + static_cast<std::ptrdiff_t>(indices[k]));
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(indices[k]));
  }
  return taken;
}

bool Scheduler::Decoding() const {
  return main_.engine->live_sentences() > 0 ||
         (express_.engine != nullptr && express_.engine->live_sentences() > 0);
}

std::vector<size_t> Scheduler::ExpressBatchLocked(absl::Time now) {
  if (express_.engine == nullptr || main_.engine->live_sentences() == 0) return {};
  const int room = express_.engine->free_slots();
  if (room == 0) return {};
  std::deque<PendingSentence> light;
  std::vector<size_t> at;  // light[k] is pending_[at[k]]
  for (size_t i = 0; i < queued_.size(); ++i) {
    const std::string& client = queued_[i].client;
    if (main_decoding_.count(client) > 0 || clients_.at(client).queued > room) continue;
    light.push_back(pending_[i]);
    at.push_back(i);
  }
  if (light.empty()) return {};
  BatchingLimits limits = options_.limits;
  limits.max_batch_sentences = std::min(limits.max_batch_sentences, room);
  limits.max_queue_delay = absl::ZeroDuration();
  std::vector<size_t> batch;
  for (size_t k : decide_batch(light, now, limits).batch) batch.push_back(at[k]);
  return batch;
}

std::vector<size_t> Scheduler::FittingLocked(const StreamingEngine& engine,
                                             std::vector<size_t> chosen) const {
  int64_t room = engine.CacheBlocksFree();
  size_t fitting = 0;
  for (; fitting < chosen.size() && queued_[chosen[fitting]].cache_blocks <= room; ++fitting) {
    room -= queued_[chosen[fitting]].cache_blocks;
  }
  chosen.resize(fitting);
  return chosen;
}

void Scheduler::Run() {
  for (;;) {
    std::vector<QueuedSentence> batch;
    Lane* admit_to = &main_;
    std::vector<std::shared_ptr<TranslationJob>> expired_jobs, cancelled;
    int64_t padded_tokens = 0;
    {
      absl::MutexLock lock(&mutex_);
      for (;;) {
        const bool decoding = Decoding();
        if (stopping_ && queued_.empty() && !decoding) return;
        BatchingLimits limits = options_.limits;
        limits.max_batch_sentences =
            std::min(limits.max_batch_sentences, main_.engine->free_slots());
        if (stopping_) limits.max_queue_delay = absl::ZeroDuration();  // drain without waiting
        const absl::Time now = clock_();
        const BatchDecision decision = decide_batch(pending_, now, limits);
        // Expired sentences fail their whole request; its other sentences go too.
        for (size_t i : decision.expired) expired_jobs.push_back(queued_[i].job);
        if (!expired_jobs.empty()) {
          for (const auto& job : expired_jobs) RemoveJobLocked(job.get());
          break;  // fail them with the lock released, then decide again
        }
        std::vector<size_t> chosen = ExpressBatchLocked(now);
        if (!chosen.empty()) chosen = FittingLocked(*express_.engine, std::move(chosen));
        if (!chosen.empty()) {
          admit_to = &express_;
        } else if (limits.max_batch_sentences > 0) {
          // Sentences that do not fit wait for the blocks of those decoding (there are some:
          // with nothing decoding, every sentence within the cap fits).
          chosen = FittingLocked(*main_.engine, decision.batch);
        }
        if (!chosen.empty()) {
          for (size_t i : chosen) {
            padded_tokens = std::max(padded_tokens, pending_[i].tokens);
            if (observer_) observer_->on_queue_wait(now - pending_[i].enqueued);
          }
          padded_tokens *= static_cast<int64_t>(chosen.size());
          batch = TakeLocked(chosen);
          break;
        }
        if (decoding) break;  // decode a step; arrivals are looked at again after it
        wake_.WaitWithTimeout(&mutex_, decision.wait);
      }
      // Whatever ended the wait (a batch, expiries, or a step to decode with nothing
      // admitted), the depth reported is the queue's: a step alone once reported 0 while
      // hundreds of sentences waited.
      if (observer_) observer_->on_queue_depth(static_cast<int64_t>(queued_.size()));
      cancelled.swap(cancelled_);
    }
    // Completion callbacks (which answer RPCs) never run under the queue lock.
    for (const auto& job : expired_jobs) {
      job->Fail(absl::DeadlineExceededError(
          "the deadline passed while the request waited in the queue"));
    }
    if (!batch.empty()) AdmitBatch(*admit_to, std::move(batch), padded_tokens);
    if (!cancelled.empty()) DropInFlight(cancelled);
    if (Decoding()) StepEngine(NextToStep());
  }
}

Scheduler::Lane& Scheduler::NextToStep() {
  const bool express_decoding =
      express_.engine != nullptr && express_.engine->live_sentences() > 0;
  if (express_decoding && (main_.engine->live_sentences() == 0 ||
                           express_since_main_ <= kExpressTimeShare * last_main_step_)) {
    return express_;
  }
  return main_;
}

void Scheduler::AdmitBatch(Lane& lane, std::vector<QueuedSentence> batch,
                           int64_t padded_tokens) {
  std::vector<std::vector<int32_t>> sources;
  std::vector<TranslationOptions> options;
  std::vector<Constraints> constraints;
  sources.reserve(batch.size());
  options.reserve(batch.size());
  for (QueuedSentence& sentence : batch) {
    sources.push_back(std::move(sentence.source));
    options.push_back(std::move(sentence.options));
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].constraints.empty()) continue;
    constraints.resize(batch.size());
    constraints[i] = std::move(batch[i].constraints);
  }
  auto handles = lane.engine->Admit(sources, options, constraints);
  if (!handles.ok()) {
    for (QueuedSentence& sentence : batch) {
      sentence.job->Fail(handles.status());
      SettleFollowers(sentence.cached_as, handles.status(), {});
    }
    return;
  }
  if (&lane == &main_) {
    absl::MutexLock lock(&mutex_);
    for (const QueuedSentence& sentence : batch) ++main_decoding_[sentence.client];
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    lane.in_flight[(*handles)[i]] = {std::move(batch[i].job), batch[i].index,
                                     std::move(batch[i].client), std::move(batch[i].cached_as)};
  }
  if (observer_) observer_->on_batch(static_cast<int>(batch.size()), padded_tokens);
}

void Scheduler::ForgetDecoding(Lane& lane, const std::vector<std::string>& clients) {
  if (&lane != &main_ || clients.empty()) return;
  absl::MutexLock lock(&mutex_);
  for (const std::string& client : clients) {
    const auto entry = main_decoding_.find(client);
    if (entry != main_decoding_.end() && --entry->second <= 0) main_decoding_.erase(entry);
  }
}

void Scheduler::DropInFlight(const std::vector<std::shared_ptr<TranslationJob>>& cancelled) {
  for (Lane* lane : {&main_, &express_}) {
    if (lane->engine == nullptr) continue;
    std::vector<int64_t> handles;
    std::vector<std::string> clients;
    for (auto entry = lane->in_flight.begin(); entry != lane->in_flight.end();) {
      const bool gone = std::any_of(cancelled.begin(), cancelled.end(),
                                    [&](const auto& job) { return job == entry->second.job; });
      if (gone) {
        handles.push_back(entry->first);
        clients.push_back(std::move(entry->second.client));
        if (entry->second.cached_as != nullptr) {
          absl::MutexLock lock(&mutex_);
          HandOverLocked(*entry->second.cached_as, entry->second.job.get());
        }
        entry = lane->in_flight.erase(entry);
      } else {
        ++entry;
      }
    }
    if (handles.empty()) continue;
    ForgetDecoding(*lane, clients);
    const int dropped = lane->engine->Drop(handles);
    if (observer_ && dropped > 0) observer_->on_dropped(dropped);
  }
}

void Scheduler::StepEngine(Lane& lane) {
  const absl::Time start = clock_();
  std::vector<StreamingEngine::Finished> step = lane.engine->Step();
  const absl::Duration took = clock_() - start;
  if (&lane == &main_) {
    last_main_step_ = took;
    express_since_main_ = absl::ZeroDuration();
  } else {
    express_since_main_ += took;
  }
  // Counted before any result goes out, so that a client holding its answer finds its tokens
  // in the metrics.
  int64_t generated = 0;
  for (const StreamingEngine::Finished& finished : step) {
    if (finished.status.ok() && !finished.hypotheses.empty()) {
      generated += static_cast<int64_t>(finished.hypotheses[0].tokens.size());
    }
  }
  if (observer_ && generated > 0) observer_->on_generated(generated);
  for (StreamingEngine::Progress& progress : lane.engine->TakeProgress()) {
    const auto destination = lane.in_flight.find(progress.handle);
    if (destination == lane.in_flight.end()) continue;
    destination->second.job->Progress(destination->second.index,
                                      std::move(progress.stable_tokens));
  }
  std::vector<std::string> clients;
  for (StreamingEngine::Finished& finished : step) {
    const auto destination = lane.in_flight.find(finished.handle);
    if (destination == lane.in_flight.end()) continue;  // not ours: cannot happen
    const std::shared_ptr<const TranslationCache::Key>& cached_as = destination->second.cached_as;
    if (finished.status.ok()) {
      if (cached_as != nullptr && !finished.hypotheses.empty()) {
        // Stored before the followers are let go, so that a request arriving meanwhile finds
        // it in one place or the other.
        const int64_t evicted = cache_->Insert(*cached_as, finished.hypotheses);
        if (observer_) observer_->on_translation_cache_stored(cache_->stats().bytes, evicted);
      }
      SettleFollowers(cached_as, finished.status, finished.hypotheses);
      destination->second.job->Deliver(destination->second.index, std::move(finished.hypotheses));
    } else {
      SettleFollowers(cached_as, finished.status, {});
      destination->second.job->Fail(finished.status);
    }
    clients.push_back(std::move(destination->second.client));
    lane.in_flight.erase(destination);
  }
  ForgetDecoding(lane, clients);
}

}  // namespace xlate::server
