// What the backward pass tells about its progress: which gradient tensors hold their final value
// (no later part of the pass writes them). Data-parallel training uses it to all-reduce those
// gradients while the pass goes on with the layers before (trainer/distributed/
// bucketed_all_reduce.h). The backward pass reports layer by layer; the overloads below name a
// layer's tensors once, so the pass and its callers need not.
#pragma once

#include "engine/model_weights.h"
#include "engine/tensor.h"

namespace xlate::trainer {

class GradientListener {
 public:
  virtual ~GradientListener() = default;

  // `gradient` (a view into the gradient set passed to backward) is final.
  virtual void tensor_ready(const Tensor& gradient) = 0;

  void ready(const Tensor& gradient) { tensor_ready(gradient); }
  void ready(const LinearWeights& g) {
    ready(g.weight);
    ready(g.bias);
  }
  void ready(const LayerNormWeights& g) {
    ready(g.gamma);
    ready(g.beta);
  }
  void ready(const AttentionWeights& g) {
    ready(g.query);
    ready(g.key);
    ready(g.value);
    ready(g.output);
  }
  void ready(const EncoderLayerWeights& g) {
    ready(g.self_attention);
    ready(g.self_attention_norm);
    ready(g.ffn_inner);
    ready(g.ffn_outer);
    ready(g.ffn_norm);
  }
  // Pre-norm: all of a layer's but its first layer norm, whose gradient the layer below
  // computes (it normalises that layer's output).
  void ready_but_first_norm(const EncoderLayerWeights& g) {
    ready(g.self_attention);
    ready(g.ffn_inner);
    ready(g.ffn_outer);
    ready(g.ffn_norm);
  }
  void ready_but_first_norm(const DecoderLayerWeights& g) {
    ready(g.self_attention);
    ready(g.cross_attention);
    ready(g.cross_attention_norm);
    ready(g.ffn_inner);
    ready(g.ffn_outer);
    ready(g.ffn_norm);
  }
  void ready(const DecoderLayerWeights& g) {
    ready(g.self_attention);
    ready(g.self_attention_norm);
    ready(g.cross_attention);
    ready(g.cross_attention_norm);
    ready(g.ffn_inner);
    ready(g.ffn_outer);
    ready(g.ffn_norm);
  }
};

}  // namespace xlate::trainer
