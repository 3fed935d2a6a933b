// How many OpenMP threads the CPU backend uses when its cores are shared with other processes.
//
// The backend's ops run OpenMP parallel regions that end at a barrier, where libgomp spins
// before it sleeps. When another process takes one of the cores, the thread that shares that
// core runs half the time and every other thread waits for it, spinning: measured on 2 cores
// with one busy loop beside the server (bench/cpu_contention.py), 2 threads served 40.6
// sentences/s (31 per CPU-second), 1 thread 81. So the thread count follows the CPU this
// process actually gets: the cores it may run on (affinity, cgroup quota) less the cores that
// other processes kept busy over the last interval, read from /proc/stat.
#pragma once

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace xlate {

// The cores left to this process, rounded, within [1, max_threads]: at most `usable_cores`, and
// at most the machine's `machine_cores` less the `others_busy_cores` that other processes kept
// busy on average. (/proc/stat counts the whole machine: in a container pinned or limited to a
// few of many cores, the busy others are mostly elsewhere and the first bound decides.)
int threads_for_share(int max_threads, int usable_cores, int machine_cores,
                      double others_busy_cores);

// Busy time of the whole machine in clock ticks, from /proc/stat's "cpu" line: every field but
// idle and iowait (steal counts: a hypervisor's other guests had that time).
absl::StatusOr<int64_t> machine_busy_ticks(absl::string_view proc_stat);
// This process's CPU time in clock ticks (utime + stime) from /proc/self/stat.
absl::StatusOr<int64_t> process_busy_ticks(absl::string_view self_stat);

// Cores this process may run on: its affinity mask, capped by a cgroup v2 quota (cpu.max).
int usable_cores();

class CpuThreadGovernor {
 public:
  // Chooses among 1..max_threads, re-deciding at most once per `interval`.
  explicit CpuThreadGovernor(int max_threads, absl::Duration interval = absl::Milliseconds(500));

  // The thread count to use from `now` on; max_threads until a first interval has been seen,
  // and also when /proc cannot be read.
  int threads(absl::Time now);

 private:
  struct Sample {
    absl::Time at;
    int64_t machine_ticks;
    int64_t own_ticks;
  };
  static std::optional<Sample> read(absl::Time now);

  const int max_threads_;
  const int usable_cores_;
  const int machine_cores_;
  const absl::Duration interval_;
  std::optional<Sample> last_;
  int threads_;
};

}  // namespace xlate
