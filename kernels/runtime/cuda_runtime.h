// The CUDA runtime as the engine needs it, behind a CUDA-free header: device discovery, streams,
// copies, and the device and pinned host memory behind CachingAllocator.
// CUDA errors become std::runtime_error naming the call and CUDA's message (they are faults of
// the machine or of the program, never of user input).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "kernels/runtime/caching_allocator.h"
#include "kernels/element_type.h"

namespace xlate::kernels {

// The number of usable CUDA devices: 0 when the machine has no GPU or no NVIDIA driver at all.
// A machine whose NVIDIA driver is loaded (/proc/driver/nvidia/version) but fails (too old for
// this CUDA runtime, a device in a bad state) is a fault, not "no GPU": std::runtime_error
// naming CUDA's error, so that nothing falls back to the CPU or skips its GPU tests in silence.
int cuda_device_count();
// "NVIDIA H100 80GB HBM3, compute capability 9.0, 79.1 GiB"
std::string cuda_device_description(int device);
// 10 · major + minor: 60 for a P100, 70 for a V100, 80 for an A100, 90 for an H100.
int cuda_compute_capability(int device);
void set_cuda_device(int device);
// The most shared memory one block may ask for on the current device, opting in above the
// default 48 KiB (cudaFuncAttributeMaxDynamicSharedMemorySize): 48 KiB on a P100, 227 KiB on an
// H100.
size_t max_shared_memory_per_block();
// Shared memory a block gets without opting in.
constexpr size_t kDefaultSharedMemoryPerBlock = 48 * 1024;
// Free memory of the current device in bytes (cudaMemGetInfo): what every process has left.
size_t cuda_free_memory();

// A non-blocking stream of the current device, destroyed with the object.
class CudaStream {
 public:
  CudaStream();
  ~CudaStream();
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  Stream get() const { return stream_; }
  void synchronize() const;

 private:
  Stream stream_ = nullptr;
};

void copy_host_to_device(void* device, const void* host, size_t bytes, Stream stream);
void copy_device_to_host(void* host, const void* device, size_t bytes, Stream stream);
void copy_device_to_device(void* to, const void* from, size_t bytes, Stream stream);
void fill_zero(void* device, size_t bytes, Stream stream);
void synchronize_stream(Stream stream);
// Raises the first error of an earlier asynchronous kernel launch, if any.
void check_last_launch(const char* kernel);

// cudaMalloc/cudaFree of the current device, for CachingAllocator.
std::unique_ptr<BackingMemory> make_cuda_backing_memory();
// Page-locked host memory (cudaMallocHost/cudaFreeHost), for CachingAllocator: copies between
// it and the device skip the driver's staging buffer. Pinning is slow, hence the cache.
std::unique_ptr<BackingMemory> make_pinned_backing_memory();

}  // namespace xlate::kernels
