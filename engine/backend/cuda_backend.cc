// The CUDA backend's runtime (built only with CUDA; the table of ops_cuda.cc points at it).
#include "engine/backend/cuda_backend.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "kernels/runtime/caching_allocator.h"
#include "kernels/convert.h"
#include "kernels/runtime/cuda_runtime.h"
#include "kernels/runtime/gemm.h"

namespace xlate::cuda_backend {
namespace {

// Every worker's allocator of one kind draws on the same memory, so a worker that runs out
// empties the others' caches before failing (kernels::AllocatorGroup says why).
std::shared_ptr<kernels::AllocatorGroup> device_memory_group() {
  static const auto group = std::make_shared<kernels::AllocatorGroup>();
  return group;
}

std::shared_ptr<kernels::AllocatorGroup> pinned_memory_group() {
  static const auto group = std::make_shared<kernels::AllocatorGroup>();
  return group;
}

// XLATE_CUDA_MEMORY_CACHING=0 gives every block an allocation of its own, freed at once: for
// compute-sanitizer, which sees an access past a block's end only then (kernels/runtime/caching_allocator.h).
bool memory_caching() {
  static const bool caching = [] {
    const char* value = std::getenv("XLATE_CUDA_MEMORY_CACHING");
    return value == nullptr || std::string(value) != "0";
  }();
  return caching;
}

struct Worker {
  kernels::CudaStream stream;
  std::shared_ptr<kernels::CachingAllocator> allocator =
      std::make_shared<kernels::CachingAllocator>(kernels::make_cuda_backing_memory(),
                                                  device_memory_group(), memory_caching());
  // Host blocks for copies that are complete before their owner lets go (copy_device_to_host
  // waits), so reusing them needs no event either.
  std::shared_ptr<kernels::CachingAllocator> pinned = std::make_shared<kernels::CachingAllocator>(
      kernels::make_pinned_backing_memory(), pinned_memory_group());
  // Created by the worker's first product (gemm()): loading and copying threads never need one.
  std::unique_ptr<kernels::GemmContext> gemm;
  double wait_seconds = 0;  // in synchronize() and copies to the host
};

Worker& worker() {
  thread_local Worker this_thread_worker;
  return this_thread_worker;
}

// Adds the lifetime of the object to the worker's wait_seconds.
class WaitTimer {
 public:
  ~WaitTimer() { worker().wait_seconds += stopwatch_.seconds(); }

 private:
  const kernels::Stopwatch stopwatch_;
};

}  // namespace

int device_count() { return kernels::cuda_device_count(); }
std::string device_description() { return kernels::cuda_device_description(0); }
int compute_capability() { return kernels::cuda_compute_capability(0); }

std::shared_ptr<void> allocate(size_t bytes) {
  std::shared_ptr<kernels::CachingAllocator> allocator = worker().allocator;
  void* block = allocator->allocate(bytes);
  return std::shared_ptr<void>(block, [allocator](void* p) { allocator->free(p); });
}

std::shared_ptr<void> allocate_pinned(size_t bytes) {
  std::shared_ptr<kernels::CachingAllocator> allocator = worker().pinned;
  void* block = allocator->allocate(bytes);
  return std::shared_ptr<void>(block, [allocator](void* p) { allocator->free(p); });
}

size_t bytes_in_use() { return worker().allocator->stats().bytes_in_use; }
size_t peak_bytes_in_use() { return worker().allocator->stats().peak_bytes_in_use; }
size_t bytes_reserved() { return worker().allocator->stats().bytes_reserved; }
size_t device_memory_free() { return kernels::cuda_free_memory(); }

kernels::Stream stream() { return worker().stream.get(); }

kernels::GemmContext& gemm() {
  Worker& current = worker();
  if (current.gemm == nullptr) {
    current.gemm = std::make_unique<kernels::GemmContext>(current.stream.get());
  }
  return *current.gemm;
}

void set_float32_math(kernels::Float32Math math) { gemm().set_float32_math(math); }

kernels::Float32Math float32_math() {
  const Worker& current = worker();
  return current.gemm == nullptr ? kernels::Float32Math::kExact : current.gemm->float32_math();
}

void copy_host_to_device(void* device, const void* host, size_t bytes) {
  kernels::copy_host_to_device(device, host, bytes, stream());
}

void copy_device_to_host(void* host, const void* device, size_t bytes) {
  const WaitTimer timer;
  kernels::copy_device_to_host(host, device, bytes, stream());
  worker().stream.synchronize();
}

void copy_device_to_device(void* to, const void* from, size_t bytes) {
  kernels::copy_device_to_device(to, from, bytes, stream());
}

void fill_zero(void* device, size_t bytes) { kernels::fill_zero(device, bytes, stream()); }

void convert(void* out, DType out_dtype, const void* inp, DType inp_dtype, int64_t count) {
  kernels::convert(out, element_type(out_dtype), inp, element_type(inp_dtype), count, stream());
}

kernels::ElementType element_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return kernels::ElementType::kFloat32;
    case DType::kFloat16: return kernels::ElementType::kFloat16;
    case DType::kBFloat16: return kernels::ElementType::kBFloat16;
    case DType::kInt32:
    case DType::kInt8: break;
  }
  throw std::logic_error("element_type: " + dtype_name(dtype) + " is not a float type");
}

void synchronize() {
  const WaitTimer timer;
  worker().stream.synchronize();
}

double wait_seconds() { return worker().wait_seconds; }

kernels::PlanCacheCounts plan_counts() {
  const Worker& current = worker();
  return current.gemm == nullptr ? kernels::PlanCacheCounts{} : current.gemm->plan_counts();
}

}  // namespace xlate::cuda_backend
