// Opt-in accounting of where inference time goes, per op category, for benchmarks.
// Disabled by default; when disabled a ScopedOpTimer costs one relaxed atomic load.
#pragma once

#include <chrono>
#include <cstdint>

namespace xlate {

enum class OpCategory { kMatmul, kAttention, kSoftmax, kCount };

void set_op_profiling(bool enabled);
void reset_op_profile();
// Accumulated wall time in seconds of ops of one category since the last reset.
double op_profile_seconds(OpCategory category);

class ScopedOpTimer {
 public:
  explicit ScopedOpTimer(OpCategory category);
  ~ScopedOpTimer();
  ScopedOpTimer(const ScopedOpTimer&) = delete;
  ScopedOpTimer& operator=(const ScopedOpTimer&) = delete;

 private:
  OpCategory category_;
  bool active_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace xlate
