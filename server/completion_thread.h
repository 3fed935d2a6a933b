// A thread that runs the completion callbacks of finished requests (detokenising the results,
// filling the reply, finishing the RPC), in the order they are posted, so that the scheduler's
// engine thread hands a finished request over and goes on decoding instead of waiting on it.
#pragma once

#include <deque>
#include <functional>
#include <thread>

#include "absl/synchronization/mutex.h"

namespace xlate::server {

class CompletionThread {
 public:
  CompletionThread();
  // Runs everything posted so far, then joins the thread.
  ~CompletionThread();
  CompletionThread(const CompletionThread&) = delete;
  CompletionThread& operator=(const CompletionThread&) = delete;

  // Queues `work` to run on the completion thread; never blocks on the work. Safe from any
  // thread; must not be called once the destructor has begun.
  void Post(std::function<void()> work);

 private:
  void Run();
  bool ReadyLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return stopping_ || !queue_.empty();
  }

  mutable absl::Mutex mutex_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mutex_);
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace xlate::server
