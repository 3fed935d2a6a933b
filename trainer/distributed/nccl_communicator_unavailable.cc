// The NCCL communicator of a build without NCCL's headers (or without CUDA).
#include "trainer/distributed/nccl_communicator.h"

namespace xlate {

bool nccl_built() { return false; }

absl::StatusOr<std::unique_ptr<Communicator>> create_nccl_communicator(Communicator&) {
  return absl::UnimplementedError(
      "this build has no NCCL (nccl.h was not found when it was configured): GPU ranks reduce "
      "their gradients through host memory");
}

}  // namespace xlate
