// Which GPU a rank of a data-parallel run uses: one GPU per rank, chosen by the rank's index on
// its node (the launcher's local rank), before the process makes its first CUDA call, by
// narrowing CUDA_VISIBLE_DEVICES to that one GPU (so that device 0 of every rank is its own).
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace xlate {

// This process's index among the ranks on its node, from the launcher's environment (Open MPI's
// OMPI_COMM_WORLD_LOCAL_RANK, MPICH's MPI_LOCALRANKID, Slurm's SLURM_LOCALID); none when it was
// not started by one of them.
std::optional<int> launcher_local_rank();

// The CUDA_VISIBLE_DEVICES value for local rank `local_rank`: the local_rank-th entry of
// `devices` (comma-separated, from --devices) when given, else of `visible` (the environment's
// CUDA_VISIBLE_DEVICES) when set (its only entry when it has one: the launcher bound one GPU to
// this process), else the index itself. Entries are trimmed of spaces. INVALID_ARGUMENT naming
// the list and the rank when the list has no entry for it or an empty entry.
absl::StatusOr<std::string> rank_visible_device(int local_rank, const std::string& devices,
                                                const std::optional<std::string>& visible);

// Under a launcher: sets CUDA_VISIBLE_DEVICES for this rank (rank_visible_device with the
// environment) and returns the device it chose; without one, changes nothing and returns none.
// Must run before any CUDA call of the process.
absl::StatusOr<std::optional<std::string>> select_rank_gpu(const std::string& devices);

}  // namespace xlate
