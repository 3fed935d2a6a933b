// Opt-in accounting of where inference time goes, per op category, for benchmarks.
// Disabled by default; when disabled a ScopedOpTimer costs one relaxed atomic load.
#pragma once

#include <chrono>
#include <cstdint>

namespace xlate {

// kOther: embedding, layer norm, row gather/scatter. kTransfer: copies between host and device;
// a copy to the host first waits for the device's queue, so on a GPU this is where the host
// waits for the kernels it launched (the other categories are then the host's launch time).
enum class OpCategory { kMatmul, kAttention, kSoftmax, kOther, kTransfer, kCount };

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
