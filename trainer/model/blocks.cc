#include "trainer/model/blocks.h"

#include "engine/ops/training_ops.h"

namespace xlate::trainer {
namespace {

// An activation (or its gradient) shaped as x but for the last axis: of x's dtype and device
// (float32, or the 16-bit storage of 16-bit activations).
Tensor like(const Tensor& x, int64_t last) {
  std::vector<int64_t> shape = x.shape();
  shape.back() = last;
  return Tensor::empty(shape, x.dtype(), x.device());
}

Tensor project(const Tensor& x, const LinearWeights& w,
               Activation activation = Activation::kNone) {
  Tensor out = like(x, w.weight.dim(0));
  linear_forward(out, x, w.weight, w.bias, activation);
  return out;
}

}  // namespace

Tensor attention_block_forward(AttentionCache& cache, const AttentionWeights& weights,
                               const AttentionInputs& inputs) {
  cache.query = project(inputs.x, weights.query);
  cache.key = project(inputs.memory, weights.key);
  cache.value = project(inputs.memory, weights.value);
  const int64_t sentences = inputs.x.dim(0), queries = inputs.x.dim(1);
  const int64_t keys = inputs.memory.dim(1);
  cache.probs =
      Tensor::empty({sentences, inputs.heads, queries, keys}, DType::kFloat32, inputs.x.device());
  cache.context = like(inputs.x, weights.value.weight.dim(0));
  attention_forward(cache.context, cache.query, cache.key, cache.value, inputs.key_rows,
                    inputs.key_lengths, inputs.heads, inputs.causal, &cache.probs);
  return project(cache.context, weights.output);
}

void attention_block_backward(Tensor& dx_accumulate, Tensor& dmemory_accumulate,
                              AttentionWeights& grads, const Tensor& dout,
                              const AttentionCache& cache, const AttentionWeights& weights,
                              const AttentionInputs& inputs) {
  Tensor dcontext = like(cache.context, cache.context.dim(-1));
  linear_backward(dcontext, grads.output.weight, grads.output.bias, dout, cache.context,
                  weights.output.weight, GradientWrite::kOverwrite);
  Tensor dquery = like(cache.query, cache.query.dim(-1));
  Tensor dkey = like(cache.key, cache.key.dim(-1));
  Tensor dvalue = like(cache.value, cache.value.dim(-1));
  attention_backward(dquery, dkey, dvalue, dcontext, cache.probs, cache.query, cache.key,
                     cache.value, inputs.heads);
  linear_backward(dx_accumulate, grads.query.weight, grads.query.bias, dquery, inputs.x,
                  weights.query.weight, GradientWrite::kAccumulate);
  linear_backward(dmemory_accumulate, grads.key.weight, grads.key.bias, dkey, inputs.memory,
                  weights.key.weight, GradientWrite::kAccumulate);
  linear_backward(dmemory_accumulate, grads.value.weight, grads.value.bias, dvalue,
                  inputs.memory, weights.value.weight, GradientWrite::kAccumulate);
}

Tensor feed_forward_forward(FeedForwardCache& cache, const LinearWeights& inner,
                            const LinearWeights& outer, const Tensor& x, DropoutSite dropout) {
  cache.activation = project(x, inner, Activation::kRelu);
  if (dropout.p > 0.f) {
    cache.hidden = like(cache.activation, cache.activation.dim(-1));
    dropout_forward(cache.hidden, cache.activation, dropout.p, dropout.key);
  } else {
    cache.hidden = cache.activation;
  }
  return project(cache.hidden, outer);
}

void feed_forward_backward(Tensor& dx_accumulate, LinearWeights& inner_grads,
                           LinearWeights& outer_grads, const Tensor& dout,
                           const FeedForwardCache& cache, const LinearWeights& inner,
                           const LinearWeights& outer, const Tensor& x, DropoutSite dropout) {
  Tensor dhidden = like(cache.hidden, cache.hidden.dim(-1));
  linear_backward(dhidden, outer_grads.weight, outer_grads.bias, dout, cache.hidden,
                  outer.weight, GradientWrite::kOverwrite);
  dropout_relu_backward(dhidden, dhidden, cache.activation, dropout.p, dropout.key);
  linear_backward(dx_accumulate, inner_grads.weight, inner_grads.bias, dhidden, x, inner.weight,
                  GradientWrite::kAccumulate);
}

Tensor residual_norm_forward(ResidualNormCache& cache, const Tensor& residual, Tensor& sublayer,
                             const LayerNormWeights& norm, DropoutSite dropout) {
  const int64_t rows = residual.numel() / residual.dim(-1);
  cache.dropout = dropout.p;
  cache.dropout_key = dropout.key;
  cache.sum = sublayer;
  cache.mean = Tensor::empty({rows}, DType::kFloat32, residual.device());
  cache.rstd = Tensor::empty({rows}, DType::kFloat32, residual.device());
  Tensor out = like(residual, residual.dim(-1));
  add_layer_norm_forward(out, sublayer, residual, norm.gamma, norm.beta, kLayerNormEps, &cache);
  return out;
}

Tensor residual_norm_backward(Tensor& dsublayer, LayerNormWeights& grads, const Tensor& dout,
                              const ResidualNormCache& cache, const LayerNormWeights& norm) {
  Tensor dresidual = like(dout, dout.dim(-1));
  dsublayer = like(dout, dout.dim(-1));
  layer_norm_backward(dresidual, dsublayer, grads.gamma, grads.beta, dout, cache, norm.gamma);
  return dresidual;
}

Tensor residual_norm_backward_into(Tensor& dresidual, LayerNormWeights& grads,
                                   const Tensor& dout, const ResidualNormCache& cache,
                                   const LayerNormWeights& norm) {
  GradientWrite write = GradientWrite::kAccumulate;
  if (!dresidual.defined()) {
    dresidual = like(dout, dout.dim(-1));
    write = GradientWrite::kOverwrite;
  }
  Tensor dsublayer = like(dout, dout.dim(-1));
  layer_norm_backward(dresidual, dsublayer, grads.gamma, grads.beta, dout, cache, norm.gamma,
                      write);
  return dsublayer;
}

}  // namespace xlate::trainer
