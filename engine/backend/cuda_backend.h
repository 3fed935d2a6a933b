// The CUDA backend's runtime, CUDA-free: what the CUDA table (engine/ops/cuda/ops_cuda.cc) and
// its bodies call, and the other CUDA-only code (NCCL's communicator, the CUDA tests). Generic
// code reaches the runtime through the backend table (engine/ops/backend.h). Built only with
// CUDA.
//
// Each thread that runs CUDA work is a worker with its own stream and caching allocator,
// created on its first use (see kernels/runtime/caching_allocator.h for why the allocator belongs to the
// stream), and a cuBLASLt context (handle, 32 MiB workspace, plans) created on its first
// product: a thread that only loads weights or copies results pays for no workspace. Device
// tensors keep their allocator alive.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "engine/dtype.h"
#include "kernels/element_type.h"
#include "kernels/runtime/plan_cache.h"

namespace xlate::kernels {
class GemmContext;
}

namespace xlate::cuda_backend {

// Usable GPUs; 0 in a CPU-only build or on a machine without a GPU or driver. Throws
// std::runtime_error when an NVIDIA driver is loaded but fails (kernels::cuda_device_count).
int device_count();
// "NVIDIA H100 80GB HBM3, compute capability 9.0, 79.1 GiB"
std::string device_description();
// 10 · major + minor of the GPU the workers use (90 for an H100).
int compute_capability();

// Device memory from this worker's caching allocator; throws std::bad_alloc when the GPU is full.
std::shared_ptr<void> allocate(size_t bytes);
// Page-locked host memory from this worker's pinned caching allocator, for buffers a copy from
// the device fills (such copies wait for the stream, so a block is idle when it comes back).
std::shared_ptr<void> allocate_pinned(size_t bytes);
// Bytes this worker's allocator has handed out and not received back.
size_t bytes_in_use();
// The most bytes_in_use() has been: the memory the work needed at once (PyTorch's
// torch.cuda.max_memory_allocated), below bytes_reserved() by what the cache held idle.
size_t peak_bytes_in_use();
// Bytes this worker's allocator holds from the device (in use + cached): its high-water mark.
size_t bytes_reserved();
// Free device memory (every process's use counted), in bytes.
size_t device_memory_free();

kernels::Stream stream();
kernels::GemmContext& gemm();
// How this worker's products of float32 tensors compute (kernels::Float32Math; kExact unless
// set): mixed-precision training runs its steps with float16 or bfloat16 inputs.
void set_float32_math(kernels::Float32Math math);
kernels::Float32Math float32_math();

// Copies in the worker's stream; a copy to the host waits for it.
void copy_host_to_device(void* device, const void* host, size_t bytes);
void copy_device_to_host(void* host, const void* device, size_t bytes);
void copy_device_to_device(void* to, const void* from, size_t bytes);
void fill_zero(void* device, size_t bytes);
// Float element type conversion of `count` elements on the device.
void convert(void* out, DType out_dtype, const void* inp, DType inp_dtype, int64_t count);
// The kernels' name of a float dtype (throws std::logic_error for int32).
kernels::ElementType element_type(DType dtype);
void synchronize();
// Seconds the calling worker's thread has spent waiting for its stream (synchronize, copies to
// the host) since it began. A training step's time less its waits is the host's own share
// (batching, launching kernels, planning products): a step that hardly waits is bound by the
// host, not the GPU. 0 in a CPU-only build.
double wait_seconds();
// The calling worker's cuBLASLt plans made so far and their host seconds (none before its first
// product).
kernels::PlanCacheCounts plan_counts();

}  // namespace xlate::cuda_backend
