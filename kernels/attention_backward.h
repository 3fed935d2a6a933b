// Attention's backward pass: the softmax step between products that run through kernels/runtime/gemm.h,
// or the whole pass for sentences whose heads fit in shared memory. float32. Every reduction
// runs in an order fixed by the shapes alone (no atomics), so a training step is
// bit-reproducible on a device; the CPU body of the op in engine/ops/cpu/ is the reference
// (tests/kernels/training_ops_cuda_test.cc). CUDA-free.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/element_type.h"

namespace xlate::kernels {

// dscores[R, S] (dP in, dS out) = probs ⊙ (dP - Σ_s dP ⊙ probs) · scale, row by row.
void softmax_backward(float* dscores, const float* probs, int64_t rows, int64_t width,
                      float scale, Stream stream);

// The whole backward of attention over short sentences in one kernel, one block per (head,
// sentence) holding that sentence's q, k, v, dout and probabilities of the head in shared memory
// (float32): dV = Pᵀ dO; dP = dO Vᵀ; dS = P ⊙ (dP - rowsum(dP ⊙ P)) · scale; dQ = dS K;
// dK = dSᵀ Q. The products then cost no launch per head and no 16-bit rounding of their
// operands. Shapes (packed, batch-major): q, dq [N, T, h·d_k]; k, dk [N, S, h·d_k];
// v, dv [N, S, h·d_v]; dout [N, T, h·d_v]; probs [N, h, T, S]; dq, dk, dv are overwritten.
struct AttentionBackwardShape {
  int64_t sentences = 0;  // N
  int64_t queries = 0;    // T
  int64_t keys = 0;       // S
  int heads = 0;
  int key_dim = 0;    // d_k
  int value_dim = 0;  // d_v
};
// Whether one sentence's head fits the current device's shared memory (else the products run
// through kernels/runtime/gemm.h and softmax_backward).
bool attention_backward_fits(const AttentionBackwardShape& shape);
// q, k, v, dout, dq, dk, dv of `type` (staged and summed as float32, the gradients rounded
// once); probs float32.
void attention_backward(void* dq, void* dk, void* dv, const void* dout, const float* probs,
                        const void* q, const void* k, const void* v,
                        const AttentionBackwardShape& shape, float scale, ElementType type,
                        Stream stream);

}  // namespace xlate::kernels
