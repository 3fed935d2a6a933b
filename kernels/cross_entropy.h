// Label-smoothed cross entropy fused with log-softmax: no V-wide tensor beyond log_probs.
// Logits and what is written over them in float32, float16 or bfloat16 storage, arithmetic in
// float32 and the row losses in double. Every reduction runs in an order fixed by the shapes
// alone (no atomics), so a training step is bit-reproducible on a device; the CPU body of the op
// in engine/ops/cpu/ is the reference (tests/kernels/training_ops_cuda_test.cc). CUDA-free.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/element_type.h"

namespace xlate::kernels {

// Per counted row m (targets[m] != ignore_id): log_probs[m] = log_softmax(logits[m]) (may alias),
// row_losses[2m] = label-smoothed loss, row_losses[2m + 1] = -log p(target), in double; ignored
// rows get 0 and keep their log_probs. logits and log_probs of `type`.
void cross_entropy_forward(void* log_probs, double* row_losses, const void* logits,
                           const int32_t* targets, int64_t rows, int64_t classes, float smoothing,
                           int ignore_id, ElementType type, Stream stream);
// The forward's row losses and, in the same pass, the backward's dlogits (may alias logits; 0 on
// ignored rows) for a step that knows dloss (its loss scale) before the forward: no log_probs.
void cross_entropy_forward_backward(void* dlogits, double* row_losses, const void* logits,
                                    const int32_t* targets, int64_t rows, int64_t classes,
                                    float smoothing, int ignore_id, float dloss, ElementType type,
                                    Stream stream);
void cross_entropy_backward(void* dlogits, const void* log_probs, const int32_t* targets,
                            int64_t rows, int64_t classes, float smoothing, int ignore_id,
                            float dloss, ElementType type, Stream stream);

}  // namespace xlate::kernels
