// How much memory a served model's KV cache (engine/kv_cache_pool.h) may grow to when
// --kv_cache_mib does not say: what the process may use, less what it holds already (the weights
// just loaded, the runtime) and a margin for a step's activations.
#pragma once

#include <cstdint>

#include "engine/tensor.h"

namespace xlate::server {

// The memory this process may use: its cgroup's limit (v2 memory.max, or v1
// memory.limit_in_bytes) where one is set, else the machine's physical memory.
int64_t process_memory_limit_bytes();
// This process's resident memory now (/proc/self/statm).
int64_t resident_memory_bytes();

// The default cap of a KV cache on `device`: on the CPU, process_memory_limit_bytes() less the
// resident memory and a margin of 256 MiB + 1/8 of the limit; on a GPU, 3/4 of the device's free
// memory. At least 16 MiB.
int64_t default_kv_cache_bytes(Device device);

}  // namespace xlate::server
