// The Transformer's sub-layers for training, each a forward that fills a cache and a backward
// that reads it: multi-head attention (with its four projections), the ReLU feed-forward
// network, and the post-norm residual connection LN(x + Dropout(sublayer(x))). The forwards are
// the engine's ops (engine/ops/ops.h), the backwards its training ops, so one definition runs on
// the device of the tensors it is given: activations are allocated where the inputs live.
// Legend: N sentences, T query positions, S key positions, C = d_model, F = d_ff, M = N·T.
// Gradient rule: parameter gradients +=; the input gradients named d*_accumulate +=.
#pragma once

#include <cstdint>

#include "engine/model_weights.h"
#include "engine/ops/ops.h"
#include "engine/tensor.h"

namespace xlate::trainer {

struct AttentionCache {
  Tensor query;    // [N, T, h·d_k]
  Tensor key;      // [N, S, h·d_k]
  Tensor value;    // [N, S, h·d_v]
  Tensor probs;    // [N, h, T, S]
  Tensor context;  // [N, T, h·d_v], the heads concatenated
};

struct AttentionInputs {
  const Tensor& x;            // [N, T, C] queries come from here
  const Tensor& memory;       // [N, S, C] keys and values (== x for self-attention)
  const Tensor& key_rows;     // int32 [N, S]: n·S + s (engine/key_rows.h), memory's rows
  // int32 [N]: keys a query sees; causal: T for every sentence, so query t sees keys s <= t (a
  // padded query then sees padded keys, but no loss reaches it, so nothing flows back)
  const Tensor& key_lengths;
  int heads;
  bool causal;
};

// Returns the output projection [N, T, C].
Tensor attention_block_forward(AttentionCache& cache, const AttentionWeights& weights,
                               const AttentionInputs& inputs);
// dx_accumulate and dmemory_accumulate may be the same tensor (self-attention).
void attention_block_backward(Tensor& dx_accumulate, Tensor& dmemory_accumulate,
                              AttentionWeights& grads, const Tensor& dout,
                              const AttentionCache& cache, const AttentionWeights& weights,
                              const AttentionInputs& inputs);

struct FeedForwardCache {
  Tensor activation;  // [M, F] ReLU output
  Tensor hidden;      // [M, F] after activation dropout (== activation when p = 0)
};

struct DropoutSite {
  float p;
  uint64_t key;
};

// Returns fc2(Dropout(ReLU(fc1(x)))) [M, C].
Tensor feed_forward_forward(FeedForwardCache& cache, const LinearWeights& inner,
                            const LinearWeights& outer, const Tensor& x, DropoutSite dropout);
void feed_forward_backward(Tensor& dx_accumulate, LinearWeights& inner_grads,
                           LinearWeights& outer_grads, const Tensor& dout,
                           const FeedForwardCache& cache, const LinearWeights& inner,
                           const LinearWeights& outer, const Tensor& x, DropoutSite dropout);

// The sum x + Dropout(sublayer) [M, C] (in the sublayer's memory), its statistics and the
// dropout's mask: all that the backward reads.
using ResidualNormCache = LayerNormTraining;

// Returns LN(residual + Dropout(sublayer)) [M, C]. `sublayer` is overwritten (by the sum).
Tensor residual_norm_forward(ResidualNormCache& cache, const Tensor& residual, Tensor& sublayer,
                             const LayerNormWeights& norm, DropoutSite dropout);
// Returns d(residual) [M, C] (the sublayer's input gradient is then added to it) and writes
// d(sublayer) into dsublayer.
Tensor residual_norm_backward(Tensor& dsublayer, LayerNormWeights& grads, const Tensor& dout,
                              const ResidualNormCache& cache, const LayerNormWeights& norm);
// The same where the sum is used twice (pre-norm: the residual stream goes on past the layer
// norm): dresidual holds the stream's gradient from above (undefined: none yet, so it is made)
// and gets the layer norm's part added; returns d(sublayer).
Tensor residual_norm_backward_into(Tensor& dresidual, LayerNormWeights& grads,
                                   const Tensor& dout, const ResidualNormCache& cache,
                                   const LayerNormWeights& norm);

}  // namespace xlate::trainer
