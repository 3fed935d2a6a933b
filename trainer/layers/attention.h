// Multi-head scaled dot-product attention for the trainer's CPU model: whole sequences,
// batch-major, the probabilities saved for the backward pass (the engine's attention_backward,
// engine/ops/training_ops.h).
// Legend: N sentences, T query positions, S key positions, h heads, d_k / d_v per-head widths.
#pragma once

#include "engine/tensor.h"

namespace xlate::trainer {

// out[N, T, h·d_v] = softmax(q kᵀ / sqrt(d_k) + mask) v per head; probs[N, h, T, S] saved.
// q [N, T, h·d_k], k [N, S, h·d_k], v [N, S, h·d_v]; key_lengths int32 [N] masks padded keys;
// causal additionally hides keys s > t (self-attention of the decoder, T == S).
void attention_forward(Tensor& out, Tensor& probs, const Tensor& q, const Tensor& k,
                       const Tensor& v, const Tensor& key_lengths, int heads, bool causal);

}  // namespace xlate::trainer
