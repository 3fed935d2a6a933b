// Collective communication between the ranks of a data-parallel training run.
//
// Every rank computes gradients on its own shard of a batch; all_reduce_sum adds them up so that
// every rank applies the same update and keeps identical weights. The interface is free of any
// transport: the CPU implementation is MPI (trainer/distributed/mpi_communicator.cc), and a NCCL
// implementation for GPUs can slot in behind the same calls. A process that was not started by
// a launcher (mpirun) gets the SingleProcessCommunicator, so `xlate-trainer train` needs no MPI
// runtime at all.
//
// The contract of every collective (all_reduce_sum, reduce_scatter_sum, all_gather_shards,
// broadcast, all_gather, barrier): every rank calls it, in the same order, with the same
// count/bytes/root. A rank that skips one leaves the others waiting forever; a communicator's
// collectives are called from one thread at a time.
// Counts are int64_t: calls larger than one transport call can carry (an MPI count is an int)
// are cut into chunks of at most CommunicatorOptions::max_count_per_call elements.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/distributed/flat_range.h"

namespace xlate {

class Communicator {
 public:
  virtual ~Communicator() = default;

  // This process's rank in [0, world_size()), and the number of ranks.
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // What carries the messages: "single-process", "mpi".
  virtual std::string name() const = 0;
  // Whether the collectives may be called from a thread other than the one that created the
  // communicator (still one thread at a time). MPI allows it at MPI_THREAD_SERIALIZED or above.
  virtual bool allows_collectives_from_any_thread() const = 0;

  // In place: data[i] becomes the sum over all ranks of their data[i]. count >= 0 elements.
  // Sums are exact for int64_t; for floating point the order of additions is the transport's,
  // identical on every rank (every rank receives the same bits).
  virtual absl::Status all_reduce_sum(float* data, int64_t count) = 0;
  virtual absl::Status all_reduce_sum(double* data, int64_t count) = 0;
  virtual absl::Status all_reduce_sum(int64_t* data, int64_t count) = 0;
  // In place: data[i] becomes the maximum over all ranks (e.g. to agree on a stop flag).
  virtual absl::Status all_reduce_max(int64_t* data, int64_t count) = 0;

  // The two halves of an all-reduce, for optimizer state sharded over the ranks (ZeRO-1): over
  // `count` elements at `data`, cut into world_size() parts by shard_of(count, r, world_size()).
  // reduce_scatter_sum: afterwards this rank's part holds the sum over all ranks of their
  // elements there (in the transport's order of additions: with two ranks the same bits as
  // all_reduce_sum, with more possibly not); the other parts hold unspecified values. all_gather_shards: afterwards every rank holds, in each rank r's part,
  // what rank r held there. Both in place.
  virtual absl::Status reduce_scatter_sum(float* data, int64_t count) = 0;
  virtual absl::Status all_gather_shards(float* data, int64_t count) = 0;

  // Copies `bytes` bytes at `data` on rank `root` into `data` on every other rank.
  virtual absl::Status broadcast(void* data, int64_t bytes, int root) = 0;

  // Every rank contributes `bytes_per_rank` bytes from `send`; afterwards `recv`, which holds
  // world_size() * bytes_per_rank bytes and must not overlap `send`, has rank r's bytes at
  // offset r * bytes_per_rank on every rank.
  virtual absl::Status all_gather(const void* send, int64_t bytes_per_rank, void* recv) = 0;

  // Returns once every rank has called it.
  virtual absl::Status barrier() = 0;

  // Ends every rank of the job with `exit_code`, without waiting for the others. Only for a
  // binary's main() after an error that this rank cannot recover from: returning from main
  // instead would leave the other ranks waiting in their next collective. Library code returns
  // its error instead of calling this.
  [[noreturn]] virtual void abort_job(int exit_code) = 0;
};

// World of one: every collective is the identity (all_gather copies), abort_job calls std::exit.
class SingleProcessCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  std::string name() const override { return "single-process"; }
  bool allows_collectives_from_any_thread() const override { return true; }
  absl::Status all_reduce_sum(float* data, int64_t count) override;
  absl::Status all_reduce_sum(double* data, int64_t count) override;
  absl::Status all_reduce_sum(int64_t* data, int64_t count) override;
  absl::Status all_reduce_max(int64_t* data, int64_t count) override;
  absl::Status reduce_scatter_sum(float* data, int64_t count) override;
  absl::Status all_gather_shards(float* data, int64_t count) override;
  absl::Status broadcast(void* data, int64_t bytes, int root) override;
  absl::Status all_gather(const void* send, int64_t bytes_per_rank, void* recv) override;
  absl::Status barrier() override;
  [[noreturn]] void abort_job(int exit_code) override;
};


struct CommunicatorOptions {
  enum class Backend {
    kAuto,           // MPI when launched_by_mpi(), single-process otherwise
    kSingleProcess,  // always a world of one
    kMpi,            // MPI even without a launcher (a singleton MPI world of one)
  };
  Backend backend = Backend::kAuto;
  // The largest number of elements (bytes for broadcast/all_gather) in one transport call;
  // larger collectives are cut into chunks. The default is the most an MPI count (int) holds;
  // tests set a small value to exercise the chunking.
  int64_t max_count_per_call = 2147483647;
};

// True when the environment says this process was started by an MPI launcher: Open MPI's
// mpirun sets OMPI_COMM_WORLD_SIZE, PMIx launchers PMIX_RANK, MPICH's Hydra PMI_RANK.
bool launched_by_mpi();

// The communicator that the options and the environment ask for. The MPI one initialises MPI on
// first use and finalises it when the last MPI communicator of the process is destroyed; MPI
// cannot be initialised again after that, so a process keeps one communicator for its whole run.
// Creating an MPI communicator is itself a collective: every rank creates it.
absl::StatusOr<std::unique_ptr<Communicator>> create_communicator(
    const CommunicatorOptions& options = {});

// For implementations of Communicator: INVALID_ARGUMENT for a negative count or a null buffer
// with a positive count, naming `operation`; OK otherwise.
absl::Status check_collective_buffer(const void* data, int64_t count, const char* operation);

// A 64-bit fingerprint of `bytes` bytes at `data`, continuing from `seed` (so that several
// buffers can be chained: seed each with the previous result). Not cryptographic; equal inputs
// give equal fingerprints on every rank and platform of the same endianness.
inline constexpr uint64_t kFingerprintSeed = 0x6a09e667f3bcc908ULL;
uint64_t fingerprint_bytes(const void* data, int64_t bytes, uint64_t seed = kFingerprintSeed);

// A collective: returns OK on every rank when every rank passed the same fingerprint, and the
// same FAILED_PRECONDITION error on every rank otherwise, naming `what` and which ranks hold
// which value. For checking that all ranks hold identical weights, config, data order, ...
absl::Status check_same_on_all_ranks(Communicator& communicator, uint64_t fingerprint,
                                     std::string_view what);

}  // namespace xlate
