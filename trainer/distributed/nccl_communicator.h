// Gradient collectives between the GPUs of a data-parallel run, over NCCL: one GPU per rank,
// the ranks started by an MPI launcher. CUDA-free.
//
// The NCCL communicator is bootstrapped through the ranks' host communicator (rank 0 makes the
// NCCL unique id and broadcasts it) and carries only the collectives on DEVICE memory, the
// gradient's: every pointer given to it is on this rank's GPU. Host-memory collectives (loss
// sums, flags, fingerprints) stay on the host communicator, which also serves barrier() and
// abort_job().
//
// Ordering: a collective waits on the GPU for everything that the creating thread's CUDA stream
// (the training thread's, cuda_backend::stream()) had queued when the collective was called,
// runs on a stream of its own, and returns once it is complete. Called from the bucketed
// reduction's thread, it therefore overlaps the backward pass that thread keeps queueing.
//
// reduce_scatter_sum and all_gather_shards follow shard_of's partition, whose parts may differ
// by one element, so they are grouped ncclReduce / ncclBroadcast calls, one per rank's part,
// rather than ncclReduceScatter / ncclAllGather (which need equal parts).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "trainer/distributed/communicator.h"

namespace xlate {

// Whether this build has NCCL's headers (CMake found nccl.h); libnccl.so.2 itself is loaded
// when the first communicator is made.
bool nccl_built();

// A collective: every rank of `host` calls it. `host` must outlive the returned communicator.
// UNIMPLEMENTED in a build without NCCL; UNAVAILABLE on every rank when any rank cannot load
// libnccl.so.2 (or make the unique id); FAILED_PRECONDITION naming the cause when the
// communicator cannot be made (ranks sharing a GPU, no GPU). A collective that meets an error
// while it waits (a peer gone, the network down) aborts the communicator and returns it.
absl::StatusOr<std::unique_ptr<Communicator>> create_nccl_communicator(Communicator& host);

}  // namespace xlate
