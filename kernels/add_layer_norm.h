// out[M, C] = LayerNorm(inp + residual) * gamma + beta over the last axis, eps inside the sqrt;
// statistics in float32. `out` may alias `inp` or `residual`. All four share one element type.
// Training passes an AddLayerNormTraining: inp goes through its dropout first, and the summed
// rows and their statistics are kept for layer_norm_backward (kernels/layer_norm_backward.h).
#pragma once

#include <cstdint>

#include "rules/dropout_mask.h"
#include "kernels/element_type.h"

namespace xlate::kernels {

// Widths up to kMaxLayerNormChannels: the summed row is staged in shared memory (32 KiB, under
// the 48 KiB every device allows without opting in).
constexpr int64_t kMaxLayerNormChannels = 8192;

// The residual sub-layer of training, LN(residual + Dropout(inp)): all of it or none.
struct AddLayerNormTraining {
  rules::DropoutMask dropout;  // on inp, by element index (dropout_forward's mask)
  void* sum;            // [M, C] of the element type: Dropout(inp) + residual (may alias inp)
  float* mean;          // [M]
  float* rstd;          // [M] 1 / sqrt(variance + eps)
};

// training: nullptr for inference. `out` may not alias an input then.
void add_layer_norm_forward(void* out, const void* inp, const void* residual, const void* gamma,
                            const void* beta, int64_t rows, int64_t channels, float eps,
                            const AddLayerNormTraining* training, ElementType type,
                            Stream stream);

}  // namespace xlate::kernels
