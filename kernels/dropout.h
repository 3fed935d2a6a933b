// Dropout with the counter-based mask of rules/dropout_mask.h, on float32, float16 or bfloat16
// storage (float32 arithmetic, each result rounded once to the storage type). The CPU body of
// the op in engine/ops/cpu/ is the reference (tests/kernels/training_ops_cuda_test.cc).
// CUDA-free.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/element_type.h"

namespace xlate::kernels {

// out = inp / (1 - p) where rules/dropout_mask.h keeps element i, else 0; may alias. All of
// `type`.
void dropout_forward(void* out, const void* inp, int64_t count, float p, uint64_t key,
                     ElementType type, Stream stream);
// dinp = dout / (1 - p) where the mask keeps element i and relu_out[i] > 0, else 0 (dropout's
// backward, then ReLU's, in one pass); may alias dout. All of `type`.
void dropout_relu_backward(void* dinp, const void* dout, const void* relu_out, int64_t count,
                           float p, uint64_t key, ElementType type, Stream stream);

}  // namespace xlate::kernels
