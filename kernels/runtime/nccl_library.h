// NCCL, loaded with dlopen on first use instead of linked: a binary built with CUDA then starts
// on machines without NCCL (every single-GPU and CPU run), and only a multi-GPU training run
// needs libnccl.so.2.
//
// Included only by sources that need nccl.h (kernels/, trainer/distributed/nccl_*).
#pragma once

#include <nccl.h>

namespace xlate::kernels {

struct NcclLibrary {
  decltype(&ncclGetVersion) get_version;
  decltype(&ncclGetUniqueId) get_unique_id;
  decltype(&ncclCommInitRank) comm_init_rank;
  decltype(&ncclCommDestroy) comm_destroy;
  decltype(&ncclCommAbort) comm_abort;
  decltype(&ncclCommGetAsyncError) comm_get_async_error;
  decltype(&ncclGetErrorString) error_string;
  decltype(&ncclAllReduce) all_reduce;
  decltype(&ncclReduce) reduce;
  decltype(&ncclBroadcast) broadcast;
  decltype(&ncclAllGather) all_gather;
  decltype(&ncclGroupStart) group_start;
  decltype(&ncclGroupEnd) group_end;
};

// Loads libnccl.so.<the major version of the headers> once; throws std::runtime_error naming the
// library and the loader's message when it or one of its functions is missing.
const NcclLibrary& nccl();

}  // namespace xlate::kernels
