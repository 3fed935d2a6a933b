#include "engine/profiling.h"

#include <atomic>

namespace xlate {
namespace {

std::atomic<bool> profiling_enabled{false};
std::atomic<int64_t> nanoseconds[static_cast<int>(OpCategory::kCount)];

}  // namespace

void set_op_profiling(bool enabled) { profiling_enabled.store(enabled); }

void reset_op_profile() {
  for (auto& counter : nanoseconds) counter.store(0);
}

double op_profile_seconds(OpCategory category) {
  return static_cast<double>(nanoseconds[static_cast<int>(category)].load()) * 1e-9;
}

ScopedOpTimer::ScopedOpTimer(OpCategory category)
    : category_(category), active_(profiling_enabled.load(std::memory_order_relaxed)) {
  if (active_) start_ = std::chrono::steady_clock::now();
}

ScopedOpTimer::~ScopedOpTimer() {
  if (!active_) return;
  const auto elapsed = std::chrono::steady_clock::now() - start_;
  nanoseconds[static_cast<int>(category_)].fetch_add(
      std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count(),
      std::memory_order_relaxed);
}

}  // namespace xlate
