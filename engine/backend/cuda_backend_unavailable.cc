// cuda_backend in a CPU-only build: reports no devices; the rest is unreachable.
#include <stdexcept>

#include "engine/backend/cuda_backend.h"

namespace xlate::cuda_backend {
namespace {

[[noreturn]] void unavailable() {
  throw std::logic_error("this build of xlate has no CUDA backend (nvcc was not found)");
}

}  // namespace

bool built() { return false; }
int device_count() { return 0; }
std::string device_description() { unavailable(); }
int compute_capability() { unavailable(); }
std::shared_ptr<void> allocate(size_t) { unavailable(); }
std::shared_ptr<void> allocate_pinned(size_t) { unavailable(); }
size_t bytes_in_use() { return 0; }
size_t peak_bytes_in_use() { return 0; }
size_t bytes_reserved() { return 0; }
double wait_seconds() { return 0; }
kernels::PlanCacheCounts plan_counts() { return {}; }
size_t device_memory_free() { return 0; }
kernels::Stream stream() { unavailable(); }
kernels::GemmContext& gemm() { unavailable(); }
void set_float32_math(kernels::Float32Math) { unavailable(); }
kernels::Float32Math float32_math() { return kernels::Float32Math::kExact; }
void copy_host_to_device(void*, const void*, size_t) { unavailable(); }
void copy_device_to_host(void*, const void*, size_t) { unavailable(); }
void copy_device_to_device(void*, const void*, size_t) { unavailable(); }
void fill_zero(void*, size_t) { unavailable(); }
void convert(void*, DType, const void*, DType, int64_t) { unavailable(); }
kernels::ElementType element_type(DType) { unavailable(); }
void synchronize() { unavailable(); }

}  // namespace xlate::cuda_backend
