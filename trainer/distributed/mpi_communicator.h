// The MPI implementation of Communicator (CPU ranks started by mpirun). Its header names no MPI
// type: everything MPI lives in mpi_communicator.cc. Most callers use create_communicator().
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/distributed/communicator.h"

namespace xlate {

// A communicator over a duplicate of MPI_COMM_WORLD, with MPI_ERRORS_RETURN so that a failing
// MPI call becomes an error status carrying MPI's error string. Initialises MPI (thread level
// MPI_THREAD_SERIALIZED requested) when it is not yet initialised; the last MPI communicator
// destroyed finalises it, if this code initialised it. A collective: every rank calls it.
// Fails with FAILED_PRECONDITION once MPI was finalised in this process, and with
// INVALID_ARGUMENT for a max_count_per_call outside [1, INT_MAX].
absl::StatusOr<std::unique_ptr<Communicator>> create_mpi_communicator(int64_t max_count_per_call);

// The status for MPI error code `code` returned by MPI function `call`: INTERNAL, with MPI's
// error string and error class ("MPI_Bcast failed: MPI_ERR_ROOT: invalid root (MPI error
// class 8)").
absl::Status mpi_error_status(const char* call, int code);

}  // namespace xlate
