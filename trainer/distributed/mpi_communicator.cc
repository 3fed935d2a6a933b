#include "trainer/distributed/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace xlate {
namespace {

// MPI is initialised once per process and can never be initialised again after MPI_Finalize,
// so all MPI communicators share one initialisation; the last one destroyed finalises MPI when
// this code was the one that initialised it. Guarded by g_mpi_mutex.
std::mutex g_mpi_mutex;
int g_live_communicators = 0;
bool g_initialized_here = false;

class MpiCommunicator final : public Communicator {
 public:
  // Takes ownership of `comm` (a duplicate of MPI_COMM_WORLD).
  MpiCommunicator(MPI_Comm comm, int rank, int world_size, int64_t max_count_per_call,
                  int thread_level)
      : comm_(comm), rank_(rank), world_size_(world_size),
        max_count_per_call_(max_count_per_call), thread_level_(thread_level) {}

  ~MpiCommunicator() override {
    std::lock_guard<std::mutex> lock(g_mpi_mutex);
    --g_live_communicators;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;  // finalised behind our back: nothing left to free
    MPI_Comm_free(&comm_);
    if (g_live_communicators == 0 && g_initialized_here) MPI_Finalize();
  }

  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  std::string name() const override { return "mpi"; }
  bool allows_collectives_from_any_thread() const override {
    return thread_level_ >= MPI_THREAD_SERIALIZED;
  }

  absl::Status all_reduce_sum(float* data, int64_t count) override {
    return all_reduce(data, count, MPI_FLOAT, MPI_SUM, "all_reduce_sum");
  }
  absl::Status all_reduce_sum(double* data, int64_t count) override {
    return all_reduce(data, count, MPI_DOUBLE, MPI_SUM, "all_reduce_sum");
  }
  absl::Status all_reduce_sum(int64_t* data, int64_t count) override {
    return all_reduce(data, count, MPI_INT64_T, MPI_SUM, "all_reduce_sum");
  }
  absl::Status all_reduce_max(int64_t* data, int64_t count) override {
    return all_reduce(data, count, MPI_INT64_T, MPI_MAX, "all_reduce_max");
  }

  absl::Status reduce_scatter_sum(float* data, int64_t count) override {
    if (absl::Status status = check_collective_buffer(data, count, "reduce_scatter_sum");
        !status.ok()) {
      return status;
    }
    // Too large for one call's int counts: the whole sum, which holds this rank's part too.
    if (count > max_count_per_call_) return all_reduce_sum(data, count);
    const std::vector<int> counts = part_counts(count);
    // In place, MPI leaves this rank's part at the start of the buffer.
    const int code = MPI_Reduce_scatter(MPI_IN_PLACE, data, counts.data(), MPI_FLOAT, MPI_SUM, comm_);
    if (code != MPI_SUCCESS) return mpi_error_status("MPI_Reduce_scatter", code);
    const FlatRange own = shard_of(count, rank_, world_size_);
    if (own.offset > 0) std::memmove(data + own.offset, data, static_cast<size_t>(own.count) * sizeof(float));
    return absl::OkStatus();
  }

  absl::Status all_gather_shards(float* data, int64_t count) override {
    if (absl::Status status = check_collective_buffer(data, count, "all_gather_shards");
        !status.ok()) {
      return status;
    }
    if (count > max_count_per_call_) {
      // Every rank in turn broadcasts its part (chunked by broadcast).
      for (int r = 0; r < world_size_; ++r) {
        const FlatRange part = shard_of(count, r, world_size_);
        absl::Status status = broadcast(data + part.offset,
                                        part.count * static_cast<int64_t>(sizeof(float)), r);
        if (!status.ok()) return status;
      }
      return absl::OkStatus();
    }
    const std::vector<int> counts = part_counts(count);
    std::vector<int> offsets(counts.size());
    for (int r = 0; r < world_size_; ++r) {
      offsets[static_cast<size_t>(r)] = static_cast<int>(shard_of(count, r, world_size_).offset);
    }
    // In place, every rank's own part is already where it is gathered to.
    const int code = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, counts.data(),
                                    offsets.data(), MPI_FLOAT, comm_);
    return code == MPI_SUCCESS ? absl::OkStatus() : mpi_error_status("MPI_Allgatherv", code);
  }

  absl::Status broadcast(void* data, int64_t bytes, int root) override {
    if (root < 0 || root >= world_size_) {
      return absl::InvalidArgumentError(absl::StrCat("broadcast: root ", root,
                                                     " is not a rank of a world of ",
                                                     world_size_));
    }
    if (absl::Status status = check_collective_buffer(data, bytes, "broadcast"); !status.ok()) {
      return status;
    }
    auto* bytes_ptr = static_cast<char*>(data);
    for (int64_t offset = 0; offset < bytes; offset += max_count_per_call_) {
      const int n = static_cast<int>(std::min(max_count_per_call_, bytes - offset));
      const int code = MPI_Bcast(bytes_ptr + offset, n, MPI_BYTE, root, comm_);
      if (code != MPI_SUCCESS) return mpi_error_status("MPI_Bcast", code);
    }
    return absl::OkStatus();
  }

  absl::Status all_gather(const void* send, int64_t bytes_per_rank, void* recv) override {
    if (absl::Status status = check_collective_buffer(send, bytes_per_rank, "all_gather"); !status.ok()) {
      return status;
    }
    if (absl::Status status = check_collective_buffer(recv, bytes_per_rank, "all_gather"); !status.ok()) {
      return status;
    }
    if (bytes_per_rank == 0) return absl::OkStatus();
    auto* out = static_cast<char*>(recv);
    if (bytes_per_rank <= max_count_per_call_) {
      const int n = static_cast<int>(bytes_per_rank);
      const int code = MPI_Allgather(send, n, MPI_BYTE, out, n, MPI_BYTE, comm_);
      return code == MPI_SUCCESS ? absl::OkStatus() : mpi_error_status("MPI_Allgather", code);
    }
    // Too large for one call: every rank in turn broadcasts its block (chunked) from its place
    // in `recv`. Large gathers are rare (small metadata is the usual use), so simplicity wins.
    std::copy_n(static_cast<const char*>(send), bytes_per_rank, out + rank_ * bytes_per_rank);
    for (int r = 0; r < world_size_; ++r) {
      if (absl::Status status = broadcast(out + r * bytes_per_rank, bytes_per_rank, r);
          !status.ok()) {
        return status;
      }
    }
    return absl::OkStatus();
  }

  absl::Status barrier() override {
    const int code = MPI_Barrier(comm_);
    return code == MPI_SUCCESS ? absl::OkStatus() : mpi_error_status("MPI_Barrier", code);
  }

  [[noreturn]] void abort_job(int exit_code) override {
    MPI_Abort(comm_, exit_code);
    // MPI_Abort does not return in practice; should it, end this rank at least.
    std::_Exit(exit_code);
  }

 private:
  template <typename T>
  absl::Status all_reduce(T* data, int64_t count, MPI_Datatype type, MPI_Op op,
                          const char* operation) {
    if (absl::Status status = check_collective_buffer(data, count, operation); !status.ok()) return status;
    for (int64_t offset = 0; offset < count; offset += max_count_per_call_) {
      const int n = static_cast<int>(std::min(max_count_per_call_, count - offset));
      const int code = MPI_Allreduce(MPI_IN_PLACE, data + offset, n, type, op, comm_);
      if (code != MPI_SUCCESS) return mpi_error_status("MPI_Allreduce", code);
    }
    return absl::OkStatus();
  }

  // Every rank's part of `count` elements (count <= max_count_per_call_ <= INT_MAX).
  std::vector<int> part_counts(int64_t count) const {
    std::vector<int> counts(static_cast<size_t>(world_size_));
    for (int r = 0; r < world_size_; ++r) {
      counts[static_cast<size_t>(r)] = static_cast<int>(shard_of(count, r, world_size_).count);
    }
    return counts;
  }

  MPI_Comm comm_;
  const int rank_;
  const int world_size_;
  const int64_t max_count_per_call_;
  const int thread_level_;  // what MPI provides: MPI_THREAD_SINGLE ... MPI_THREAD_MULTIPLE
};

}  // namespace

absl::Status mpi_error_status(const char* call, int code) {
  // MPI may not be asked for its strings outside MPI_Init ... MPI_Finalize.
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) {
    return absl::InternalError(absl::StrCat(call, " failed: MPI error code ", code));
  }
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  int error_class = code;
  MPI_Error_class(code, &error_class);
  return absl::InternalError(absl::StrCat(call, " failed: ", std::string(text, length),
                                          " (MPI error class ", error_class, ")"));
}

absl::StatusOr<std::unique_ptr<Communicator>> create_mpi_communicator(
    int64_t max_count_per_call) {
  if (max_count_per_call < 1 || max_count_per_call > INT_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_count_per_call must be in [1, ", INT_MAX, "], got ", max_count_per_call));
  }
  std::lock_guard<std::mutex> lock(g_mpi_mutex);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) {
    return absl::FailedPreconditionError(
        "MPI was already finalised in this process and cannot be initialised again: keep one "
        "communicator alive for the whole run");
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // Ranks waiting in a collective yield the core instead of busy-polling (Open MPI; unless
    // the user chose otherwise). Training reduces gradients on a thread of its own while its
    // compute threads use every core, so a spinning wait would slow the backward pass it is
    // meant to overlap (2 cores, 2 ranks, base model, 4 MiB buckets: 1,216 tokens/s yielding,
    // 883 spinning; docs/data-parallel-training.md).
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
    int provided = 0;
    const int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (code != MPI_SUCCESS) return mpi_error_status("MPI_Init_thread", code);
    g_initialized_here = true;
    // Errors of later calls on the world (MPI_Comm_dup below) come back as codes, not aborts.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  int thread_level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&thread_level);
  MPI_Comm comm = MPI_COMM_NULL;
  int code = MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  if (code != MPI_SUCCESS) return mpi_error_status("MPI_Comm_dup", code);
  int rank = 0;
  int world_size = 0;
  code = MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  if (code == MPI_SUCCESS) code = MPI_Comm_rank(comm, &rank);
  if (code == MPI_SUCCESS) code = MPI_Comm_size(comm, &world_size);
  if (code != MPI_SUCCESS) {
    MPI_Comm_free(&comm);
    return mpi_error_status("setting up the MPI communicator", code);
  }
  ++g_live_communicators;  // balanced by ~MpiCommunicator
  auto communicator =
      std::make_unique<MpiCommunicator>(comm, rank, world_size, max_count_per_call, thread_level);
  return std::unique_ptr<Communicator>(std::move(communicator));
}

}  // namespace xlate
