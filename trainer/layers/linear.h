// The fully connected layer for training: out[M, N] = act(inp[M, K] · weight[N, K]ᵀ + bias[N]).
// Same maths as the engine's linear_forward, but through sgemm, which needs no per-shape
// primitive: every training batch has another row count M.
// Accumulation rule of every trainer layer: parameter gradients +=, activation gradients =
// (unless the argument says it accumulates).
#pragma once

#include "engine/tensor.h"

namespace xlate::trainer {

enum class GradientWrite { kOverwrite, kAccumulate };

// out[M, N] = inp · weightᵀ + bias (bias may be undefined), then ReLU when `relu`.
void linear_forward(Tensor& out, const Tensor& inp, const Tensor& weight, const Tensor& bias,
                    bool relu);

// dinp[M, K] (=/+= per `write`) = dout[M, N] · weight; dweight[N, K] += doutᵀ · inp;
// dbias[N] += Σ_rows dout (skipped when undefined). dinp may be undefined (not needed).
void linear_backward(Tensor& dinp, Tensor& dweight, Tensor& dbias, const Tensor& dout,
                     const Tensor& inp, const Tensor& weight,
                     GradientWrite write = GradientWrite::kOverwrite);

// dinp = dout where out > 0, else 0 (out is ReLU's output). May alias.
void relu_backward(Tensor& dinp, const Tensor& dout, const Tensor& out);

// sums[N] += Σ_m x[m, :] in a fixed order, whatever the thread count (bit-reproducible).
void add_column_sums(float* sums, const float* x, int64_t rows, int64_t columns);

}  // namespace xlate::trainer
