#include "server/completion_thread.h"

#include <utility>

namespace xlate::server {

CompletionThread::CompletionThread() : thread_([this] { Run(); }) {}

CompletionThread::~CompletionThread() {
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
  }
  thread_.join();
}

void CompletionThread::Post(std::function<void()> work) {
  absl::MutexLock lock(&mutex_);
  queue_.push_back(std::move(work));
}

void CompletionThread::Run() {
  for (;;) {
    std::deque<std::function<void()>> batch;
    {
      absl::MutexLock lock(&mutex_);
      mutex_.Await(absl::Condition(this, &CompletionThread::ReadyLocked));
      if (queue_.empty()) return;  // stopping, and everything posted has run
      batch.swap(queue_);
    }
    // The callbacks answer RPCs: they run with no lock held.
    for (std::function<void()>& work : batch) work();
  }
}

}  // namespace xlate::server
