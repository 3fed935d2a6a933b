#include "server/task_thread.h"

#include <utility>

namespace xlate::server {

TaskThread::TaskThread() : thread_([this] { Run(); }) {}

TaskThread::~TaskThread() {
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
  }
  thread_.join();
}

void TaskThread::Post(std::function<void()> work) {
  absl::MutexLock lock(&mutex_);
  queue_.push_back(std::move(work));
}

void TaskThread::Run() {
  for (;;) {
    std::deque<std::function<void()>> batch;
    {
      absl::MutexLock lock(&mutex_);
      mutex_.Await(absl::Condition(this, &TaskThread::ReadyLocked));
      if (queue_.empty()) return;  // stopping, and everything posted has run
      batch.swap(queue_);
    }
    // Completion callbacks answer RPCs, and a model's destruction waits for its threads: work
    // runs with no lock held.
    for (std::function<void()>& work : batch) work();
  }
}

}  // namespace xlate::server
