#include "kernels/runtime/cuda_runtime.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include "kernels/runtime/cuda_check.h"

namespace xlate::kernels {

int cuda_device_count() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error == cudaSuccess) return count;
  cudaGetLastError();  // clear the sticky error
  // No device, or no driver installed (the runtime then reports an insufficient driver too).
  const bool driver_loaded = std::ifstream("/proc/driver/nvidia/version").good();
  if (error == cudaErrorNoDevice || !driver_loaded) return 0;
  throw std::runtime_error(std::string("CUDA: cudaGetDeviceCount failed with an NVIDIA driver "
                                       "loaded: ") +
                           cudaGetErrorName(error) + ": " + cudaGetErrorString(error));
}

std::string cuda_device_description(int device) {
  cudaDeviceProp properties{};
  XLATE_CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
  char text[320];
  std::snprintf(text, sizeof(text), "%s, compute capability %d.%d, %.1f GiB", properties.name,
                properties.major, properties.minor,
                static_cast<double>(properties.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

int cuda_compute_capability(int device) {
  int major = 0, minor = 0;
  XLATE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  XLATE_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return 10 * major + minor;
}

size_t max_shared_memory_per_block() {
  int device = 0, bytes = 0;
  XLATE_CUDA_CHECK(cudaGetDevice(&device));
  XLATE_CUDA_CHECK(
      cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return static_cast<size_t>(bytes);
}

void set_cuda_device(int device) { XLATE_CUDA_CHECK(cudaSetDevice(device)); }

size_t cuda_free_memory() {
  size_t free_bytes = 0, total_bytes = 0;
  XLATE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return free_bytes;
}

CudaStream::CudaStream() {
  XLATE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

CudaStream::~CudaStream() {
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void CudaStream::synchronize() const { synchronize_stream(stream_); }

void copy_host_to_device(void* device, const void* host, size_t bytes, Stream stream) {
  XLATE_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream));
}

void copy_device_to_host(void* host, const void* device, size_t bytes, Stream stream) {
  XLATE_CUDA_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream));
}

void copy_device_to_device(void* to, const void* from, size_t bytes, Stream stream) {
  XLATE_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream));
}

void fill_zero(void* device, size_t bytes, Stream stream) {
  XLATE_CUDA_CHECK(cudaMemsetAsync(device, 0, bytes, stream));
}

void synchronize_stream(Stream stream) { XLATE_CUDA_CHECK(cudaStreamSynchronize(stream)); }

void check_last_launch(const char* kernel) { throw_on_cuda_error(cudaGetLastError(), kernel); }

namespace {

// Blocks from an allocate/free pair of the runtime (device or page-locked host memory).
template <cudaError_t (*kAllocate)(void**, size_t), cudaError_t (*kFree)(void*)>
class RuntimeBackingMemory : public BackingMemory {
 public:
  explicit RuntimeBackingMemory(const char* call) : call_(call) {}
  void* allocate(size_t bytes) override {
    void* block = nullptr;
    const cudaError_t error = kAllocate(&block, bytes);
    if (error == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // out of memory is recoverable: the allocator empties its cache
      return nullptr;
    }
    throw_on_cuda_error(error, call_);
    return block;
  }
  void release(void* block) override { kFree(block); }

 private:
  const char* call_;
};

cudaError_t malloc_device(void** block, size_t bytes) { return cudaMalloc(block, bytes); }
cudaError_t malloc_host(void** block, size_t bytes) { return cudaMallocHost(block, bytes); }

}  // namespace

std::unique_ptr<BackingMemory> make_cuda_backing_memory() {
  return std::make_unique<RuntimeBackingMemory<malloc_device, cudaFree>>("cudaMalloc");
}

std::unique_ptr<BackingMemory> make_pinned_backing_memory() {
  return std::make_unique<RuntimeBackingMemory<malloc_host, cudaFreeHost>>("cudaMallocHost");
}

}  // namespace xlate::kernels
