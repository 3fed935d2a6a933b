// The fully connected layer's forward for the trainer's CPU model: out[M, N] =
// act(inp[M, K] · weight[N, K]ᵀ + bias[N]), the maths of the engine's linear_forward through
// sgemm, which needs no per-shape primitive (every training batch has another row count M).
// Its backward is the engine's linear_backward (engine/ops/training_ops.h).
#pragma once

#include "engine/tensor.h"

namespace xlate::trainer {

// out[M, N] = inp · weightᵀ + bias (bias may be undefined), then ReLU when `relu`.
void linear_forward(Tensor& out, const Tensor& inp, const Tensor& weight, const Tensor& bias,
                    bool relu);

}  // namespace xlate::trainer
