// The feed-forward activations that a GEMM epilogue does not compute exactly, applied in place
// after the product: swish (x·sigmoid(x), transformers' "swish"/"silu") and GELU with the exact
// error function (transformers' "gelu"; cuBLASLt's GELU epilogue is the tanh approximation).
// float32, float16 or bfloat16 storage, float32 arithmetic, each result rounded once. The CPU
// body of linear_forward (engine/ops/cpu/linear_cpu.cc, oneDNN's eltwise_swish / gelu_erf) is
// the reference (tests/kernels/ops_cuda_test.cc). CUDA-free.
#pragma once

#include <cstdint>

#include "kernels/element_type.h"

namespace xlate::kernels {

enum class PointwiseActivation { kSwish, kGelu };

// x[i] = act(x[i]) for count elements of `type`.
void activation_forward(void* x, int64_t count, PointwiseActivation activation, ElementType type,
                        Stream stream);

}  // namespace xlate::kernels
