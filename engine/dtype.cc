#include "engine/dtype.h"

#include <cmath>
#include <cstring>

namespace xlate {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kInt8:
      return 1;
  }
  return 0;
}

bool is_float(DType dtype) { return dtype != DType::kInt32 && dtype != DType::kInt8; }

std::string dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "F32";
    case DType::kFloat16:
      return "F16";
    case DType::kBFloat16:
      return "BF16";
    case DType::kInt32:
      return "I32";
    case DType::kInt8:
      return "I8";
  }
  return "?";
}

bool dtype_from_name(const std::string& name, DType* dtype) {
  for (DType candidate : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt32,
                          DType::kInt8}) {
    if (name == dtype_name(candidate)) {
      *dtype = candidate;
      return true;
    }
  }
  return false;
}

// Bit operations only (no libm call: a model's float16 weights pass through here as it loads).
float half_to_float(uint16_t bits) {
  const uint32_t sign = (bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1f;
  const uint32_t mantissa = bits & 0x3ff;
  uint32_t out;
  if (exponent == 0) {
    // Zero or subnormal: mantissa units of 2^-24, exact in float32.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    std::memcpy(&out, &magnitude, 4);
    out |= sign;
  } else if (exponent == 31) {
    out = sign | 0x7f800000u | (mantissa << 13);  // infinity, or NaN keeping its payload
  } else {
    out = sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13);  // rebias 15 -> 127
  }
  float result;
  std::memcpy(&result, &out, 4);
  return result;
}

uint16_t float_to_half(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const float magnitude = std::fabs(value);
  if (std::isnan(value)) return sign | 0x7e00;
  if (magnitude >= 65520.0f) return sign | 0x7c00;  // rounds to infinity
  if (magnitude < 6.103515625e-05f) {
    // Subnormal range: units of 2^-24, round half to even.
    const float units = magnitude * 16777216.0f;
    return sign | static_cast<uint16_t>(std::nearbyint(units));
  }
  int exponent;
  const float fraction = std::frexp(magnitude, &exponent);  // magnitude = fraction * 2^exponent
  // fraction in [0.5, 1): 11 significant bits.
  uint32_t significand = static_cast<uint32_t>(std::nearbyint(fraction * 2048.0f));
  if (significand == 2048) {
    significand = 1024;
    ++exponent;
  }
  const uint32_t biased = static_cast<uint32_t>(exponent + 14);
  if (biased >= 31) return sign | 0x7c00;
  return sign | static_cast<uint16_t>((biased << 10) | (significand & 0x3ff));
}

}  // namespace xlate
