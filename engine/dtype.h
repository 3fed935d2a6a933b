// Element types of tensors and the conversions between them.
#pragma once

#include <cstddef>
#include <cstdint>
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
float bfloat16_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);

}  // namespace xlate
