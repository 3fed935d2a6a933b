// Dropout with the counter-based mask of kernels/dropout_mask.h.
// float32. Every reduction runs in an order fixed by the shapes alone (no atomics), so a training
// step is bit-reproducible on a device; the CPU body of the op in engine/ops/cpu/ is the
// reference (tests/kernels/training_ops_cuda_test.cc). CUDA-free.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/element_type.h"

namespace xlate::kernels {

// out = inp / (1 - p) where kernels/dropout_mask.h keeps element i, else 0; may alias.
void dropout_forward(float* out, const float* inp, int64_t count, float p, uint64_t key,
                     Stream stream);
// dinp = dout / (1 - p) where the mask keeps element i and relu_out[i] > 0, else 0 (dropout's
// backward, then ReLU's, in one pass); may alias dout.
void dropout_relu_backward(float* dinp, const float* dout, const float* relu_out, int64_t count,
                           float p, uint64_t key, Stream stream);

}  // namespace xlate::kernels
