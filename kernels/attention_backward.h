// The softmax step of attention's backward pass (the products run through kernels/gemm.h).
// float32. Every reduction runs in an order fixed by the shapes alone (no atomics), so a training
// step is bit-reproducible on a device; the CPU body of the op in engine/ops/cpu/ is the
// reference (tests/kernels/training_ops_cuda_test.cc). CUDA-free.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/element_type.h"

namespace xlate::kernels {

// dscores[R, S] (dP in, dS out) = probs ⊙ (dP - Σ_s dP ⊙ probs) · scale, row by row.
void softmax_backward(float* dscores, const float* probs, int64_t rows, int64_t width,
                      float scale, Stream stream);

}  // namespace xlate::kernels
