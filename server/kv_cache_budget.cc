#include "server/kv_cache_budget.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "engine/ops/backend.h"

namespace xlate::server {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

std::string first_line(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line;
}

// A cgroup file's byte count; 0 for "max", a missing file or a v1 "no limit" (about 2^63).
int64_t limit_in(const std::string& path) {
  int64_t bytes = 0;
  if (!absl::SimpleAtoi(first_line(path), &bytes) || bytes <= 0 || bytes >= (int64_t{1} << 62)) {
    return 0;
  }
  return bytes;
}

// The cgroup v2 directory of this process ("0::/path" in /proc/self/cgroup).
std::string own_cgroup_v2() {
  std::ifstream file("/proc/self/cgroup");
  for (std::string line; std::getline(file, line);) {
    absl::string_view rest(line);
    if (absl::ConsumePrefix(&rest, "0::")) return "/sys/fs/cgroup" + std::string(rest);
  }
  return "/sys/fs/cgroup";
}

}  // namespace

int64_t process_memory_limit_bytes() {
  const int64_t physical = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  for (const std::string& path :
       {own_cgroup_v2() + "/memory.max", std::string("/sys/fs/cgroup/memory.max"),
        std::string("/sys/fs/cgroup/memory/memory.limit_in_bytes")}) {
    if (const int64_t limit = limit_in(path); limit > 0) return std::min(limit, physical);
  }
  return physical;
}

int64_t resident_memory_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return pages_resident * sysconf(_SC_PAGESIZE);
}

int64_t default_kv_cache_bytes(Device device) {
  int64_t bytes = 0;
  if (device == Device::kCPU) {
    const int64_t limit = process_memory_limit_bytes();
    bytes = limit - resident_memory_bytes() - 256 * kMiB - limit / 8;
  } else {
    bytes = static_cast<int64_t>(op_backend(device).memory().free) / 4 * 3;
  }
  return std::max(bytes, 16 * kMiB);
}

}  // namespace xlate::server
