// Backward of the residual LayerNorm (kernels/add_layer_norm.h saves its sum and statistics).
// Activations in float32, float16 or bfloat16 storage, arithmetic, statistics and parameter
// gradients in float32. Every reduction runs in an order fixed by the shapes alone (no
// atomics), so a training step is bit-reproducible on a device; the CPU body of the op in
// engine/ops/cpu/ is the reference (tests/kernels/training_ops_cuda_test.cc). CUDA-free.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rules/dropout_mask.h"
#include "kernels/element_type.h"

namespace xlate::kernels {

// Backward of add_layer_norm_forward under AddLayerNormTraining (its sum, statistics and
// dropout): dresidual [M, C] = ∂/∂sum, dinp [M, C] = dresidual through inp's dropout (both may
// alias dout, not each other); dgamma[C] += Σ dout · x̂ and dbeta[C] += Σ dout through partial
// sums over fixed row blocks. workspace: layer_norm_backward_workspace_floats(M, C) floats.
// accumulate_residual: dresidual holds the sum's other gradient on entry (not aliasing dout);
// it becomes that plus LayerNorm's, and dinp is the total through the dropout.
int64_t layer_norm_backward_workspace_floats(int64_t rows, int64_t channels);
// dresidual, dinp, dout, sum and gamma of `type`; mean, rstd, dgamma, dbeta float32.
void layer_norm_backward(void* dresidual, void* dinp, float* dgamma, float* dbeta,
                         const void* dout, const void* sum, const float* mean, const float* rstd,
                         const void* gamma, rules::DropoutMask dropout, int64_t rows,
                         int64_t channels, bool accumulate_residual, float* workspace,
                         ElementType type, Stream stream);

}  // namespace xlate::kernels
