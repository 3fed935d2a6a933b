// out[M, C] = LayerNorm(inp + residual) * gamma + beta over the last axis, eps inside the sqrt;
// statistics in float32. `out` may alias `inp` or `residual`. All four share one element type.
// saved_mean / saved_rstd (float32 [M], both or neither; training) receive each row's mean and
// 1 / sqrt(variance + eps) for layer_norm_backward (kernels/layer_norm_backward.h).
#pragma once

#include <cstdint>

#include "kernels/element_type.h"

namespace xlate::kernels {

// Widths up to kMaxLayerNormChannels: the summed row is staged in shared memory (32 KiB, under
// the 48 KiB every device allows without opting in).
constexpr int64_t kMaxLayerNormChannels = 8192;

void add_layer_norm_forward(void* out, const void* inp, const void* residual, const void* gamma,
                            const void* beta, int64_t rows, int64_t channels, float eps,
                            float* saved_mean, float* saved_rstd, ElementType type,
                            Stream stream);

}  // namespace xlate::kernels
