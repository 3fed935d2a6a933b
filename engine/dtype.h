// Element types of tensors and the conversions between them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace xlate {

// kInt8 holds quantised weights (engine/packed_weight.h); int types never convert.
enum class DType { kFloat32, kFloat16, kBFloat16, kInt32, kInt8 };

size_t dtype_size(DType dtype);
bool is_float(DType dtype);
// Safetensors spelling: "F32", "F16", "BF16", "I32", "I8".
std::string dtype_name(DType dtype);
bool dtype_from_name(const std::string& name, DType* dtype);

// IEEE binary16 and bfloat16 stored as raw 16-bit patterns; round to nearest even.
float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);

// bfloat16 is float32's upper half, so its conversions are a few integer operations, inline
// and branch-free so that loops over 16-bit activations vectorise.
inline float bfloat16_to_float(uint16_t bits) {
  const uint32_t widened = static_cast<uint32_t>(bits) << 16;
  float result;
  std::memcpy(&result, &widened, 4);
  return result;
}

// A NaN stays a (quiet) NaN; every other value rounds to nearest even (overflowing to inf).
inline uint16_t float_to_bfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>(nan ? ((bits >> 16) | 0x40u) : rounded);
}

}  // namespace xlate
