// Log-softmax over the vocabulary (the engine's log_softmax_forward); beam search's fused
// log-softmax + top-k is in log_softmax_top_k.h.
#pragma once

#include <cstdint>

#include "kernels/element_type.h"

namespace xlate::kernels {

// out[M, V] = log_softmax(inp[M, V]) along the last axis, in float32 arithmetic; may alias.
void log_softmax_forward(void* out, const void* inp, int64_t rows, int64_t vocabulary,
                         ElementType type, Stream stream);

}  // namespace xlate::kernels
