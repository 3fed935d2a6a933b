// The CPU backend's runtime (OpBackend's memory, copies and conversions): host memory, written
// and read at once by the calling thread.
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <vector>

#include "engine/ops/cpu/cpu_ops.h"

namespace xlate::cpu {
namespace {

// Conversions of more elements than this (16-bit activations in training) use every thread.
constexpr int64_t kParallelCount = 65536;

}  // namespace

std::shared_ptr<void> allocate(size_t bytes) {
  constexpr size_t kAlignment = 64;  // a cache line, and AVX-512's vector
  const size_t rounded = ((bytes + kAlignment - 1) / kAlignment) * kAlignment;
  void* pointer = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (pointer == nullptr) throw std::bad_alloc();
  return std::shared_ptr<void>(pointer, [](void* p) { std::free(p); });
}

void fill_zero(void* data, size_t bytes) { std::memset(data, 0, bytes); }

void copy(void* to, const void* from, size_t bytes) { std::memcpy(to, from, bytes); }

void convert(void* out, DType out_dtype, const void* inp, DType inp_dtype, int64_t count) {
  if (!is_float(out_dtype) || !is_float(inp_dtype)) {
    throw std::logic_error("convert: integer conversions are not supported");
  }
  std::vector<float> widened;
  const float* source = static_cast<const float*>(inp);
  if (inp_dtype != DType::kFloat32) {
    // Widened straight into `out` when it is float32 and does not overlap `inp` (a model's
    // float16 weights as it loads), else into a buffer of its own.
    const auto* in_bytes = static_cast<const char*>(inp);
    const auto* out_bytes = static_cast<const char*>(out);
    const bool overlap = out_bytes < in_bytes + count * 2 && in_bytes < out_bytes + count * 4;
    float* widened_to = static_cast<float*>(out);
    if (out_dtype != DType::kFloat32 || overlap) {
      widened.resize(static_cast<size_t>(count));
      widened_to = widened.data();
    }
    const auto* bits = static_cast<const uint16_t*>(inp);
    if (inp_dtype == DType::kFloat16) {
#pragma omp parallel for schedule(static) if (count > kParallelCount)
      for (int64_t i = 0; i < count; ++i) widened_to[i] = half_to_float(bits[i]);
    } else {
#pragma omp parallel for schedule(static) if (count > kParallelCount)
      for (int64_t i = 0; i < count; ++i) widened_to[i] = bfloat16_to_float(bits[i]);
    }
    if (widened_to == out) return;
    source = widened.data();
  }
  if (out_dtype == DType::kFloat32) {
    std::memmove(out, source, static_cast<size_t>(count) * sizeof(float));
    return;
  }
  auto* bits = static_cast<uint16_t*>(out);
#pragma omp parallel for schedule(static) if (count > kParallelCount)
  for (int64_t i = 0; i < count; ++i) {
    bits[i] = out_dtype == DType::kFloat16 ? float_to_half(source[i])
                                           : float_to_bfloat16(source[i]);
  }
}

}  // namespace xlate::cpu
