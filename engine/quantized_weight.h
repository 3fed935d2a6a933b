// A linear layer's weight quantised to int8 (compute type int8; engine/ops/ops.h makes and uses
// it). CUDA-free.
#pragma once

#include <cstdint>

#include "engine/tensor.h"

namespace xlate {

// The weight [N, K] as int8 values with a float scale per output row: row n of the float weight
// ≈ its int8 values · scales[n], symmetric, scales[n] = max_k |weight[n, k]| / 127. `packed`
// holds the int8 values in the layout the backend's int8 matrix product reads (opaque: made by
// quantize_linear_weight, read by quantized_linear_forward); `scales` is float32 [N].
struct QuantizedWeight {
  Tensor packed;
  Tensor scales;
  int64_t outputs = 0;  // N
  int64_t inputs = 0;   // K
  bool defined() const { return packed.defined(); }
};

}  // namespace xlate
