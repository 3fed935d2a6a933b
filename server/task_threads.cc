#include "server/task_threads.h"

#include <algorithm>
#include <utility>

namespace xlate::server {

TaskThreads::TaskThreads(int count) {
  for (int i = 0; i < std::max(1, count); ++i) threads_.emplace_back([this] { Run(); });
}

TaskThreads::~TaskThreads() {
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
  }
  for (std::thread& thread : threads_) thread.join();
}

void TaskThreads::Post(std::function<void()> work) {
  absl::MutexLock lock(&mutex_);
  queue_.push_back(std::move(work));
}

void TaskThreads::Run() {
  for (;;) {
    std::function<void()> work;
    {
      absl::MutexLock lock(&mutex_);
      mutex_.Await(absl::Condition(this, &TaskThreads::ReadyLocked));
      if (queue_.empty()) return;  // stopping, and everything posted has run
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    // Completion callbacks answer RPCs, and a model's destruction waits for its threads: work
    // runs with no lock held.
    work();
  }
}

}  // namespace xlate::server
