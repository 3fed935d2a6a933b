#include "trainer/distributed/communicator.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "trainer/distributed/mpi_communicator.h"

namespace xlate {
namespace {

bool env_set(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0';
}

}  // namespace

absl::Status SingleProcessCommunicator::all_reduce_sum(float* data, int64_t count) {
  return check_collective_buffer(data, count, "all_reduce_sum");
}

absl::Status SingleProcessCommunicator::all_reduce_sum(double* data, int64_t count) {
  return check_collective_buffer(data, count, "all_reduce_sum");
}

absl::Status SingleProcessCommunicator::all_reduce_sum(int64_t* data, int64_t count) {
  return check_collective_buffer(data, count, "all_reduce_sum");
}

absl::Status SingleProcessCommunicator::all_reduce_max(int64_t* data, int64_t count) {
  return check_collective_buffer(data, count, "all_reduce_max");
}

absl::Status SingleProcessCommunicator::reduce_scatter_sum(float* data, int64_t count) {
  return check_collective_buffer(data, count, "reduce_scatter_sum");
}

absl::Status SingleProcessCommunicator::all_gather_shards(float* data, int64_t count) {
  return check_collective_buffer(data, count, "all_gather_shards");
}

absl::Status SingleProcessCommunicator::broadcast(void* data, int64_t bytes, int root) {
  if (root != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("broadcast: root ", root, " is not a rank of a world of 1"));
  }
  return check_collective_buffer(data, bytes, "broadcast");
}

absl::Status SingleProcessCommunicator::all_gather(const void* send, int64_t bytes_per_rank,
                                                   void* recv) {
  if (absl::Status status = check_collective_buffer(send, bytes_per_rank, "all_gather"); !status.ok()) {
    return status;
  }
  if (absl::Status status = check_collective_buffer(recv, bytes_per_rank, "all_gather"); !status.ok()) {
    return status;
  }
  if (bytes_per_rank > 0) std::memmove(recv, send, static_cast<size_t>(bytes_per_rank));
  return absl::OkStatus();
}

absl::Status SingleProcessCommunicator::barrier() { return absl::OkStatus(); }

void SingleProcessCommunicator::abort_job(int exit_code) { std::exit(exit_code); }

absl::Status check_collective_buffer(const void* data, int64_t count, const char* operation) {
  if (count < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(operation, ": the count must be >= 0, got ", count));
  }
  if (count > 0 && data == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(operation, ": null buffer for ", count, " elements"));
  }
  return absl::OkStatus();
}

bool launched_by_mpi() {
  return env_set("OMPI_COMM_WORLD_SIZE") || env_set("PMIX_RANK") || env_set("PMI_RANK");
}

absl::StatusOr<std::unique_ptr<Communicator>> create_communicator(
    const CommunicatorOptions& options) {
  using Backend = CommunicatorOptions::Backend;
  const bool use_mpi = options.backend == Backend::kMpi ||
                       (options.backend == Backend::kAuto && launched_by_mpi());
  if (use_mpi) return create_mpi_communicator(options.max_count_per_call);
  return std::unique_ptr<Communicator>(std::make_unique<SingleProcessCommunicator>());
}

uint64_t fingerprint_bytes(const void* data, int64_t bytes, uint64_t seed) {
  // Eight bytes at a time: xor into the state, multiply by an odd constant, fold the high bits
  // down; the length goes in last so that trailing zero bytes change the result.
  constexpr uint64_t kMultiplier = 0x9e3779b97f4a7c15ULL;
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t state = seed;
  int64_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    state = (state ^ word) * kMultiplier;
    state ^= state >> 29;
  }
  uint64_t tail = 0;
  for (int64_t k = 0; i + k < bytes; ++k) tail |= static_cast<uint64_t>(p[i + k]) << (8 * k);
  state = (state ^ tail) * kMultiplier;
  state ^= state >> 29;
  state = (state ^ static_cast<uint64_t>(bytes)) * kMultiplier;
  state ^= state >> 32;
  return state;
}

absl::Status check_same_on_all_ranks(Communicator& communicator, uint64_t fingerprint,
                                     std::string_view what) {
  // Debian's Abseil has its own string_view type: StrCat takes a std::string.
  const std::string what_text(what);
  const int world = communicator.world_size();
  std::vector<uint64_t> all(static_cast<size_t>(world));
  if (absl::Status status =
          communicator.all_gather(&fingerprint, sizeof(fingerprint), all.data());
      !status.ok()) {
    return absl::Status(status.code(), absl::StrCat("checking that every rank has the same ",
                                                    what_text, ": ", status.message()));
  }
  // Every rank sees the same gathered values, so every rank returns the same status.
  std::vector<int> differing;
  for (int r = 1; r < world; ++r) {
    if (all[static_cast<size_t>(r)] != all[0]) differing.push_back(r);
  }
  if (differing.empty()) return absl::OkStatus();
  std::string values;
  for (int r = 0; r < world; ++r) {
    absl::StrAppend(&values, r == 0 ? "" : ", ", "rank ", r, ": ",
                    absl::StrFormat("%016x", all[static_cast<size_t>(r)]));
  }
  std::string ranks;
  for (size_t k = 0; k < differing.size(); ++k) {
    absl::StrAppend(&ranks, k == 0 ? "" : ", ", differing[k]);
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "the ranks disagree on ", what_text, ": rank", differing.size() == 1 ? " " : "s ", ranks,
      " differ", differing.size() == 1 ? "s" : "", " from rank 0 (fingerprints: ", values, ")"));
}

}  // namespace xlate
