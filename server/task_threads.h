// Threads that run posted work, so that whoever posts it goes on at once. With one thread, work
// runs in the order it is posted: the scheduler's completion thread runs the callbacks of
// finished requests (detokenising the results, filling the reply, finishing the RPC), so that
// the engine thread hands a finished request over and goes on decoding instead of waiting on
// it; the model registry's thread loads models on SIGHUP and destroys those that no call holds
// any more. With several, each takes the oldest work waiting: the HTTP server's workers
// (server/http_server.h) run the requests whose bodies have arrived.
#pragma once

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace xlate::server {

class TaskThreads {
 public:
  explicit TaskThreads(int count = 1);
  // Runs everything posted so far, then joins the threads.
  ~TaskThreads();
  TaskThreads(const TaskThreads&) = delete;
  TaskThreads& operator=(const TaskThreads&) = delete;

  // Queues `work` to run on a thread; never blocks on the work. Safe from any thread; must not
  // be called once the destructor has begun.
  void Post(std::function<void()> work);

 private:
  void Run();
  bool ReadyLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return stopping_ || !queue_.empty();
  }

  mutable absl::Mutex mutex_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mutex_);
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace xlate::server
