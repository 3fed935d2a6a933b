#include "trainer/distributed/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "engine/backend/cuda_backend.h"
#include "kernels/runtime/nccl_library.h"

namespace xlate {
namespace {

absl::Status cuda_status(cudaError_t error, const char* call) {
  if (error == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(call, " failed: ", cudaGetErrorString(error)));
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(Communicator& host, ncclComm_t comm, int device, cudaStream_t producer,
                   cudaStream_t stream, cudaEvent_t produced)
      : host_(host), comm_(comm), device_(device), producer_(producer), stream_(stream),
        produced_(produced) {}

  ~NcclCommunicator() override {
    cudaSetDevice(device_);
    cudaStreamSynchronize(stream_);
    if (!aborted_) kernels::nccl().comm_destroy(comm_);
    cudaEventDestroy(produced_);
    cudaStreamDestroy(stream_);
  }

  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return host_.rank(); }
  int world_size() const override { return host_.world_size(); }
  std::string name() const override { return "nccl"; }
  bool allows_collectives_from_any_thread() const override { return true; }

  absl::Status all_reduce_sum(float* data, int64_t count) override {
    return all_reduce(data, count, ncclFloat32, ncclSum, "all_reduce_sum");
  }
  absl::Status all_reduce_sum(double* data, int64_t count) override {
    return all_reduce(data, count, ncclFloat64, ncclSum, "all_reduce_sum");
  }
  absl::Status all_reduce_sum(int64_t* data, int64_t count) override {
    return all_reduce(data, count, ncclInt64, ncclSum, "all_reduce_sum");
  }
  absl::Status all_reduce_max(int64_t* data, int64_t count) override {
    return all_reduce(data, count, ncclInt64, ncclMax, "all_reduce_max");
  }

  absl::Status reduce_scatter_sum(float* data, int64_t count) override {
    return for_each_part(data, count, "reduce_scatter_sum", [&](float* part, size_t n, int root) {
      return kernels::nccl().reduce(part, part, n, ncclFloat32, ncclSum, root, comm_, stream_);
    });
  }

  absl::Status all_gather_shards(float* data, int64_t count) override {
    return for_each_part(data, count, "all_gather_shards", [&](float* part, size_t n, int root) {
      return kernels::nccl().broadcast(part, part, n, ncclFloat32, root, comm_, stream_);
    });
  }

  absl::Status broadcast(void* data, int64_t bytes, int root) override {
    if (root < 0 || root >= world_size()) {
      return absl::InvalidArgumentError(absl::StrCat("broadcast: root ", root,
                                                     " is not a rank of a world of ", world_size()));
    }
    if (absl::Status status = check_collective_buffer(data, bytes, "broadcast"); !status.ok()) {
      return status;
    }
    if (bytes == 0) return absl::OkStatus();
    return run("broadcast", [&] {
      return kernels::nccl().broadcast(data, data, static_cast<size_t>(bytes), ncclUint8, root,
                                       comm_, stream_);
    });
  }

  absl::Status all_gather(const void* send, int64_t bytes_per_rank, void* recv) override {
    if (absl::Status status = check_collective_buffer(send, bytes_per_rank, "all_gather"); !status.ok()) {
      return status;
    }
    if (absl::Status status = check_collective_buffer(recv, bytes_per_rank, "all_gather"); !status.ok()) {
      return status;
    }
    if (bytes_per_rank == 0) return absl::OkStatus();
    return run("all_gather", [&] {
      return kernels::nccl().all_gather(send, recv, static_cast<size_t>(bytes_per_rank),
                                        ncclUint8, comm_, stream_);
    });
  }

  absl::Status barrier() override { return host_.barrier(); }

  [[noreturn]] void abort_job(int exit_code) override {
    if (!aborted_.exchange(true)) kernels::nccl().comm_abort(comm_);  // ends NCCL's kernels
    host_.abort_job(exit_code);
    std::_Exit(exit_code);  // not reached: the host communicator's abort ends the process
  }

 private:
  template <typename T>
  absl::Status all_reduce(T* data, int64_t count, ncclDataType_t type, ncclRedOp_t op,
                          const char* operation) {
    if (absl::Status status = check_collective_buffer(data, count, operation); !status.ok()) {
      return status;
    }
    if (count == 0) return absl::OkStatus();
    return run(operation, [&] {
      return kernels::nccl().all_reduce(data, data, static_cast<size_t>(count), type, op, comm_,
                                        stream_);
    });
  }

  // One NCCL group of `call(part, elements, rank)` for every rank's part (shard_of) of `count`
  // elements at `data`.
  template <typename Call>
  absl::Status for_each_part(float* data, int64_t count, const char* operation, Call call) {
    if (absl::Status status = check_collective_buffer(data, count, operation); !status.ok()) {
      return status;
    }
    if (count == 0) return absl::OkStatus();
    return run(operation, [&] {
      const kernels::NcclLibrary& nccl = kernels::nccl();
      ncclResult_t result = nccl.group_start();
      for (int r = 0; r < world_size() && result == ncclSuccess; ++r) {
        const FlatRange part = shard_of(count, r, world_size());
        result = call(data + part.offset, static_cast<size_t>(part.count), r);
      }
      const ncclResult_t ended = nccl.group_end();
      return result != ncclSuccess ? result : ended;
    });
  }

  // Queues `enqueue`'s NCCL calls on this communicator's stream behind the producer stream's work
  // so far and waits for them. An error names `operation`, NCCL's message and this rank.
  template <typename Enqueue>
  absl::Status run(const char* operation, Enqueue enqueue) {
    if (aborted_) return annotate(operation, "the communicator was aborted after an earlier error");
    absl::Status status = cuda_status(cudaSetDevice(device_), "cudaSetDevice");
    if (status.ok()) status = cuda_status(cudaEventRecord(produced_, producer_), "cudaEventRecord");
    if (status.ok()) {
      status = cuda_status(cudaStreamWaitEvent(stream_, produced_, 0), "cudaStreamWaitEvent");
    }
    if (!status.ok()) return annotate(operation, std::string(status.message()));
    try {
      const ncclResult_t result = enqueue();
      if (result != ncclSuccess) {
        return annotate(operation, kernels::nccl().error_string(result));
      }
    } catch (const std::exception& error) {
      return annotate(operation, error.what());
    }
    return wait(operation);
  }

  // Waits for the collectives queued on stream_, polling NCCL's asynchronous error meanwhile (as
  // NCCL's documentation asks): when a peer dies or the network fails, NCCL's kernels spin
  // forever, so a blocking cudaStreamSynchronize would never return. On such an error the
  // communicator is aborted, which ends its kernels, and the error names the collective.
  absl::Status wait(const char* operation) {
    const kernels::NcclLibrary& nccl = kernels::nccl();
    for (;;) {
      const cudaError_t state = cudaStreamQuery(stream_);
      ncclResult_t asynchronous = ncclSuccess;
      const ncclResult_t queried = nccl.comm_get_async_error(comm_, &asynchronous);
      const ncclResult_t failure = queried != ncclSuccess ? queried : asynchronous;
      if (failure != ncclSuccess && failure != ncclInProgress) {
        if (!aborted_.exchange(true)) nccl.comm_abort(comm_);
        return annotate(operation, nccl.error_string(failure));
      }
      if (state == cudaSuccess) return absl::OkStatus();
      if (state != cudaErrorNotReady) {
        return annotate(operation, std::string("cudaStreamQuery: ") + cudaGetErrorString(state));
      }
      // A short sleep: the thread waiting here must not take a core from the training thread.
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  absl::Status annotate(const char* operation, const std::string& message) const {
    return absl::InternalError(absl::StrCat("NCCL ", operation, " on rank ", rank(), " (GPU ",
                                            device_, "): ", message));
  }

  Communicator& host_;
  ncclComm_t comm_;
  const int device_;
  const cudaStream_t producer_;  // the creating thread's stream, whose work a collective waits for
  const cudaStream_t stream_;    // this communicator's own
  const cudaEvent_t produced_;
  // Set once comm_ has been aborted (after an error or by abort_job): it is then unusable and
  // is not destroyed again.
  std::atomic<bool> aborted_{false};
};

}  // namespace

bool nccl_built() { return true; }

absl::StatusOr<std::unique_ptr<Communicator>> create_nccl_communicator(Communicator& host) {
  const auto failed = [&](const std::string& what) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot set up NCCL between the GPUs of the ", host.world_size(), " ranks (rank ",
        host.rank(), "): ", what));
  };
  // Every rank takes part in the broadcast below, whatever happens locally, so that no rank
  // waits for another that gave up; each then reports its own error.
  ncclUniqueId id{};
  std::string local_error;
  const kernels::NcclLibrary* nccl = nullptr;
  try {
    nccl = &kernels::nccl();
    if (host.rank() == 0) {
      const ncclResult_t result = nccl->get_unique_id(&id);
      if (result != ncclSuccess) local_error = nccl->error_string(result);
    }
  } catch (const std::exception& error) {
    local_error = error.what();
  }
  int64_t any_error = local_error.empty() ? 0 : 1;
  absl::Status status = host.all_reduce_max(&any_error, 1);
  if (!status.ok()) return status;
  if (any_error != 0) {
    // UNAVAILABLE on every rank alike (they agreed above), so that they all fall back together.
    return absl::UnavailableError(absl::StrCat(
        "cannot set up NCCL between the GPUs of the ", host.world_size(), " ranks (rank ",
        host.rank(), "): ", local_error.empty() ? "another rank could not load NCCL" : local_error));
  }
  status = host.broadcast(&id, sizeof(id), 0);
  if (!status.ok()) return status;

  int device = 0;
  cudaStream_t producer = nullptr, stream = nullptr;
  cudaEvent_t produced = nullptr;
  try {
    producer = static_cast<cudaStream_t>(cuda_backend::stream());
  } catch (const std::exception& error) {
    return failed(error.what());
  }
  status = cuda_status(cudaGetDevice(&device), "cudaGetDevice");
  if (status.ok()) {
    status = cuda_status(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                         "cudaStreamCreateWithFlags");
  }
  if (status.ok()) {
    status = cuda_status(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming),
                         "cudaEventCreateWithFlags");
  }
  if (!status.ok()) return failed(std::string(status.message()));
  ncclComm_t comm = nullptr;
  // Blocks until every rank has joined; NCCL refuses two ranks on one GPU here.
  const ncclResult_t result = nccl->comm_init_rank(&comm, host.world_size(), id, host.rank());
  if (result != ncclSuccess) {
    cudaEventDestroy(produced);
    cudaStreamDestroy(stream);
    return failed(absl::StrCat("ncclCommInitRank: ", nccl->error_string(result),
                               " (one GPU per rank: NCCL cannot put two ranks on one GPU)"));
  }
  return std::unique_ptr<Communicator>(
      new NcclCommunicator(host, comm, device, producer, stream, produced));
}

}  // namespace xlate
