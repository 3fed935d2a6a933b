// A linear layer's weight prepared once, for inference, in the layout its backend's matrix product
// reads without repacking it on every call (engine/ops/ops.h: pack_linear_weight makes it,
// packed_linear_forward uses it). CUDA-free.
#pragma once

#include <cstdint>

#include "engine/tensor.h"

namespace xlate {

// The weight [N, K] with its elements in the backend's layout (opaque): float32 as given, or
// int8 (compute type int8) with a float scale per output row: row n of the float weight ≈ its
// int8 values · scales[n], symmetric, scales[n] = max_k |weight[n, k]| / 127.
struct PackedWeight {
  Tensor packed;  // kFloat32 or kInt8 elements in the backend's layout
  Tensor scales;  // int8 only: float32 [N]; undefined for float32
  int64_t outputs = 0;  // N
  int64_t inputs = 0;   // K
  bool defined() const { return packed.defined(); }
  bool quantized() const { return packed.defined() && packed.dtype() == DType::kInt8; }
};

}  // namespace xlate
