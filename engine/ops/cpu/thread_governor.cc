#include "engine/ops/cpu/thread_governor.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace xlate {
namespace {

std::string read_text(const char* path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

absl::Status unreadable(const char* what) {
  return absl::DataLossError(absl::StrCat("cannot read ", what));
}

}  // namespace

int threads_for_share(int max_threads, int usable_cores, int machine_cores,
                      double others_busy_cores) {
  const double left = std::min<double>(usable_cores,
                                       machine_cores - std::max(0.0, others_busy_cores));
  return std::clamp(static_cast<int>(std::lround(left)), 1, std::max(1, max_threads));
}

absl::StatusOr<int64_t> machine_busy_ticks(absl::string_view proc_stat) {
  const absl::string_view line = proc_stat.substr(0, proc_stat.find('\n'));
  std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
  // cpu user nice system idle iowait irq softirq steal [guest guest_nice, inside user/nice]
  if (fields.size() < 9 || fields[0] != "cpu") return unreadable("the cpu line of /proc/stat");
  int64_t busy = 0;
  for (size_t i = 1; i <= 8; ++i) {
    int64_t ticks = 0;
    if (!absl::SimpleAtoi(fields[i], &ticks)) return unreadable("the cpu line of /proc/stat");
    if (i != 4 && i != 5) busy += ticks;  // not idle, not iowait
  }
  return busy;
}

absl::StatusOr<int64_t> process_busy_ticks(absl::string_view self_stat) {
  // pid (comm) state ppid ...: comm may hold spaces and parentheses, so fields count from the
  // last ')'; utime and stime are fields 14 and 15, the 12th and 13th after it.
  const size_t end_of_name = self_stat.rfind(')');
  if (end_of_name == absl::string_view::npos) return unreadable("/proc/self/stat");
  std::vector<absl::string_view> fields =
      absl::StrSplit(self_stat.substr(end_of_name + 1), ' ', absl::SkipEmpty());
  int64_t utime = 0, stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) ||
      !absl::SimpleAtoi(fields[12], &stime)) {
    return unreadable("/proc/self/stat");
  }
  return utime + stime;
}

int usable_cores() {
  cpu_set_t mask;
  int cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0) cores = CPU_COUNT(&mask);
  // cgroup v2: "max 100000" (no quota) or "<quota> <period>" in microseconds.
  std::vector<std::string> quota = absl::StrSplit(read_text("/sys/fs/cgroup/cpu.max"), ' ');
  double quota_us = 0, period_us = 0;
  if (quota.size() == 2 && absl::SimpleAtod(quota[0], &quota_us) &&
      absl::SimpleAtod(quota[1], &period_us) && period_us > 0) {
    cores = std::min(cores, std::max(1, static_cast<int>(std::ceil(quota_us / period_us))));
  }
  return std::max(1, cores);
}

CpuThreadGovernor::CpuThreadGovernor(int max_threads, absl::Duration interval)
    : max_threads_(std::max(1, max_threads)),
      usable_cores_(usable_cores()),
      machine_cores_(std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)))),
      interval_(interval),
      threads_(max_threads_) {}

std::optional<CpuThreadGovernor::Sample> CpuThreadGovernor::read(absl::Time now) {
  absl::StatusOr<int64_t> machine = machine_busy_ticks(read_text("/proc/stat"));
  absl::StatusOr<int64_t> own = process_busy_ticks(read_text("/proc/self/stat"));
  if (!machine.ok() || !own.ok()) return std::nullopt;
  return Sample{now, *machine, *own};
}

int CpuThreadGovernor::threads(absl::Time now) {
  if (last_ && now - last_->at < interval_) return threads_;
  std::optional<Sample> sample = read(now);
  if (!sample) return threads_ = max_threads_;
  if (last_) {
    const double ticks_per_second = static_cast<double>(sysconf(_SC_CLK_TCK));
    const double seconds = absl::ToDoubleSeconds(sample->at - last_->at);
    const double others_ticks = static_cast<double>((sample->machine_ticks - last_->machine_ticks) -
                                                    (sample->own_ticks - last_->own_ticks));
    threads_ = threads_for_share(max_threads_, usable_cores_, machine_cores_,
                                 others_ticks / ticks_per_second / seconds);
  }
  last_ = sample;
  return threads_;
}

}  // namespace xlate
