#include "kernels/runtime/nccl_library.h"

#include <string>

#include "kernels/runtime/loaded_library.h"

namespace xlate::kernels {
namespace {

NcclLibrary load() {
  const LoadedLibrary library("libnccl.so." + std::to_string(NCCL_MAJOR),
                              "NCCL, for training on several GPUs; Debian/Ubuntu: libnccl2");
  NcclLibrary api{};
  library.resolve("ncclGetVersion", &api.get_version);
  library.resolve("ncclGetUniqueId", &api.get_unique_id);
  library.resolve("ncclCommInitRank", &api.comm_init_rank);
  library.resolve("ncclCommDestroy", &api.comm_destroy);
  library.resolve("ncclCommAbort", &api.comm_abort);
  library.resolve("ncclCommGetAsyncError", &api.comm_get_async_error);
  library.resolve("ncclGetErrorString", &api.error_string);
  library.resolve("ncclAllReduce", &api.all_reduce);
  library.resolve("ncclReduce", &api.reduce);
  library.resolve("ncclBroadcast", &api.broadcast);
  library.resolve("ncclAllGather", &api.all_gather);
  library.resolve("ncclGroupStart", &api.group_start);
  library.resolve("ncclGroupEnd", &api.group_end);
  return api;  // the library stays loaded for the life of the process
}

}  // namespace

const NcclLibrary& nccl() {
  static const NcclLibrary library = load();
  return library;
}

}  // namespace xlate::kernels
