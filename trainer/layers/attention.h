// Multi-head scaled dot-product attention for training: whole sequences, batch-major, the
// probabilities saved for the backward pass.
// Legend: N sentences, T query positions, S key positions, h heads, d_k / d_v per-head widths.
#pragma once

#include "engine/tensor.h"

namespace xlate::trainer {

// out[N, T, h·d_v] = softmax(q kᵀ / sqrt(d_k) + mask) v per head; probs[N, h, T, S] saved.
// q [N, T, h·d_k], k [N, S, h·d_k], v [N, S, h·d_v]; key_lengths int32 [N] masks padded keys;
// causal additionally hides keys s > t (self-attention of the decoder, T == S).
void attention_forward(Tensor& out, Tensor& probs, const Tensor& q, const Tensor& k,
                       const Tensor& v, const Tensor& key_lengths, int heads, bool causal);

// dq, dk, dv (=) from dout [N, T, h·d_v] and the forward's tensors.
void attention_backward(Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& dout,
                        const Tensor& probs, const Tensor& q, const Tensor& k, const Tensor& v,
                        int heads);

}  // namespace xlate::trainer
