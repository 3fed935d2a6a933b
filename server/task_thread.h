// A thread that runs posted work in the order it is posted, so that whoever posts it goes on at
// once. The scheduler's completion thread runs the callbacks of finished requests (detokenising
// the results, filling the reply, finishing the RPC), so that the engine thread hands a finished
// request over and goes on decoding instead of waiting on it; the model registry's thread loads
// models on SIGHUP and destroys those that no call holds any more.
#pragma once

#include <deque>
#include <functional>
#include <thread>

#include "absl/synchronization/mutex.h"

namespace xlate::server {

class TaskThread {
 public:
  TaskThread();
  // Runs everything posted so far, then joins the thread.
  ~TaskThread();
  TaskThread(const TaskThread&) = delete;
  TaskThread& operator=(const TaskThread&) = delete;

  // Queues `work` to run on the thread; never blocks on the work. Safe from any
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
