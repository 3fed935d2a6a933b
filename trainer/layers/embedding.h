// Backward of the scaled embedding with positions. The forward is the engine's
// embedding_forward: out[N, T, C] = table[tokens[n, t]] · scale + positions[t].
#pragma once

#include "engine/tensor.h"

namespace xlate::trainer {

// dtable[V, C] += scale · dout rows scattered by token; dpositions[P, C] += Σ_n dout[n, t]
// (skipped when undefined: sinusoidal positions are not trained). tokens: int32 [N, T].
void embedding_backward(Tensor& dtable, Tensor& dpositions, const Tensor& dout,
                        const Tensor& tokens, float scale);

}  // namespace xlate::trainer
