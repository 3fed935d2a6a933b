#include "trainer/model/transformer_training.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "engine/key_rows.h"
#include "engine/ops/ops.h"
#include "engine/ops/training_ops.h"
#include "trainer/model/dropout_key.h"

namespace xlate::trainer {
namespace {

enum Stack { kEncoderStack = 1, kDecoderStack = 2 };
// Dropout slots inside a layer (slot 0 of "layer -1" is the embedding sum).
enum Slot { kSelfAttention = 0, kCrossAttention = 1, kFeedForward = 2 };

Tensor embed(const Tensor& tokens, const Tensor& table, const Tensor& positions, int channels) {
  Tensor x = Tensor::empty({tokens.dim(0), tokens.dim(1), channels}, table.dtype(),
                           table.device());
  embedding_forward(x, tokens, table, positions, std::sqrt(static_cast<float>(channels)), 0);
  return x;
}

Tensor zeros_like(const Tensor& x) { return Tensor::zeros(x.shape(), x.dtype(), x.device()); }

// LN(x + Dropout(FFN(x))), the last sub-layer of an encoder and of a decoder layer (their caches
// and weights name the members alike).
template <typename LayerCache, typename LayerWeights>
Tensor feed_forward_sublayer_forward(LayerCache& cache, const LayerWeights& w, const Tensor& x,
                                     DropoutSite activation, DropoutSite residual) {
  Tensor ffn = feed_forward_forward(cache.ffn, w.ffn_inner, w.ffn_outer, x, activation);
  return residual_norm_forward(cache.ffn_norm, x, ffn, w.ffn_norm, residual);
}

// Returns d(x) of feed_forward_sublayer_forward.
template <typename LayerCache, typename LayerWeights>
Tensor feed_forward_sublayer_backward(LayerWeights& g, const Tensor& dout, const LayerCache& cache,
                                      const LayerWeights& w, const Tensor& x,
                                      DropoutSite activation) {
  Tensor dffn;
  Tensor dx = residual_norm_backward(dffn, g.ffn_norm, dout, cache.ffn_norm, w.ffn_norm);
  feed_forward_backward(dx, g.ffn_inner, g.ffn_outer, dffn, cache.ffn, w.ffn_inner, w.ffn_outer,
                        x, activation);
  return dx;
}

}  // namespace

TransformerTraining::TransformerTraining(const ModelConfig& config) : config_(config) {}

DropoutSite TransformerTraining::site(int stack, int64_t layer, int slot, bool activation) const {
  const int64_t index = ((stack * 1024 + layer + 1) * 8 + slot) * 2 + (activation ? 1 : 0);
  const float p = activation ? dropout_.activation : dropout_.residual;
  return {p, dropout_key(dropout_.seed, dropout_.step, dropout_.micro_batch, dropout_.rank,
                         index)};
}

Tensor TransformerTraining::encoder_layer_forward(EncoderLayerCache& cache,
                                                  const EncoderLayerWeights& w, const Tensor& x,
                                                  int64_t layer) {
  cache.input = x;
  const AttentionInputs inputs{x, x, source_rows_, inputs_.source_lengths, config_.encoder_heads,
                               false};
  Tensor attention = attention_block_forward(cache.attention, w.self_attention, inputs);
  cache.attention_output = residual_norm_forward(cache.attention_norm, x, attention,
                                                 w.self_attention_norm,
                                                 site(kEncoderStack, layer, kSelfAttention));
  return feed_forward_sublayer_forward(cache, w, cache.attention_output,
                                       site(kEncoderStack, layer, kFeedForward, true),
                                       site(kEncoderStack, layer, kFeedForward));
}

Tensor TransformerTraining::encoder_layer_backward(EncoderLayerWeights& g, const Tensor& dout,
                                                   const EncoderLayerCache& cache,
                                                   const EncoderLayerWeights& w, int64_t layer) {
  Tensor dhidden = feed_forward_sublayer_backward(g, dout, cache, w, cache.attention_output,
                                                  site(kEncoderStack, layer, kFeedForward, true));
  Tensor dattention;
  Tensor dx = residual_norm_backward(dattention, g.self_attention_norm, dhidden,
                                     cache.attention_norm, w.self_attention_norm);
  const AttentionInputs inputs{cache.input, cache.input, source_rows_, inputs_.source_lengths,
                               config_.encoder_heads, false};
  attention_block_backward(dx, dx, g.self_attention, dattention, cache.attention,
                           w.self_attention, inputs);
  return dx;
}

Tensor TransformerTraining::decoder_layer_forward(DecoderLayerCache& cache,
                                                  const DecoderLayerWeights& w, const Tensor& x,
                                                  int64_t layer) {
  cache.input = x;
  const AttentionInputs self{x, x, target_rows_, causal_lengths_, config_.decoder_heads, true};
  Tensor attention = attention_block_forward(cache.self_attention, w.self_attention, self);
  cache.self_output = residual_norm_forward(cache.self_norm, x, attention, w.self_attention_norm,
                                            site(kDecoderStack, layer, kSelfAttention));
  const AttentionInputs cross{cache.self_output, encoder_output_, source_rows_,
                              inputs_.source_lengths, config_.decoder_heads, false};
  Tensor context = attention_block_forward(cache.cross_attention, w.cross_attention, cross);
  cache.cross_output = residual_norm_forward(cache.cross_norm, cache.self_output, context,
                                             w.cross_attention_norm,
                                             site(kDecoderStack, layer, kCrossAttention));
  return feed_forward_sublayer_forward(cache, w, cache.cross_output,
                                       site(kDecoderStack, layer, kFeedForward, true),
                                       site(kDecoderStack, layer, kFeedForward));
}

Tensor TransformerTraining::decoder_layer_backward(DecoderLayerWeights& g,
                                                   Tensor& dencoder_output, const Tensor& dout,
                                                   const DecoderLayerCache& cache,
                                                   const DecoderLayerWeights& w, int64_t layer) {
  Tensor dcross_output = feed_forward_sublayer_backward(
      g, dout, cache, w, cache.cross_output, site(kDecoderStack, layer, kFeedForward, true));
  Tensor dcontext;
  Tensor dself_output = residual_norm_backward(dcontext, g.cross_attention_norm, dcross_output,
                                               cache.cross_norm, w.cross_attention_norm);
  const AttentionInputs cross{cache.self_output, encoder_output_, source_rows_,
                              inputs_.source_lengths, config_.decoder_heads, false};
  attention_block_backward(dself_output, dencoder_output, g.cross_attention, dcontext,
                           cache.cross_attention, w.cross_attention, cross);
  Tensor dattention;
  Tensor dx = residual_norm_backward(dattention, g.self_attention_norm, dself_output,
                                     cache.self_norm, w.self_attention_norm);
  const AttentionInputs self{cache.input, cache.input, target_rows_, causal_lengths_,
                             config_.decoder_heads, true};
  attention_block_backward(dx, dx, g.self_attention, dattention, cache.self_attention,
                           w.self_attention, self);
  return dx;
}

void TransformerTraining::forward_to_logits(const TransformerWeights& weights,
                                            const ModelInputs& inputs,
                                            const DropoutSettings& dropout) {
  inputs_ = inputs;
  dropout_ = dropout;
  const int channels = config_.d_model;
  const Device device = weights.shared_embedding.device();
  const int64_t sentences = inputs.source_tokens.dim(0);
  const int64_t source_steps = inputs.source_tokens.dim(1);
  const int64_t target_steps = inputs.target_input.dim(1);
  source_rows_ = batch_major_key_rows(sentences, source_steps).on(device);
  target_rows_ = batch_major_key_rows(sentences, target_steps).on(device);
  causal_lengths_ = Tensor::from_vector(std::vector<int32_t>(static_cast<size_t>(sentences),
                                                             static_cast<int32_t>(target_steps)),
                                        {sentences})
                        .on(device);
  Tensor x = embed(inputs.source_tokens, weights.shared_embedding, weights.encoder_positions,
                   channels);
  const DropoutSite source_embedding = site(kEncoderStack, -1, 0);
  dropout_forward(x, x, source_embedding.p, source_embedding.key);
  encoder_.resize(weights.encoder.size());
  for (size_t l = 0; l < weights.encoder.size(); ++l) {
    x = encoder_layer_forward(encoder_[l], weights.encoder[l], x, static_cast<int64_t>(l));
  }
  encoder_output_ = x;

  Tensor y = embed(inputs.target_input, weights.shared_embedding, weights.decoder_positions,
                   channels);
  const DropoutSite target_embedding = site(kDecoderStack, -1, 0);
  dropout_forward(y, y, target_embedding.p, target_embedding.key);
  decoder_.resize(weights.decoder.size());
  for (size_t l = 0; l < weights.decoder.size(); ++l) {
    y = decoder_layer_forward(decoder_[l], weights.decoder[l], y, static_cast<int64_t>(l));
  }
  const int64_t rows = y.dim(0) * y.dim(1);
  decoder_output_ = y.reshape({rows, channels});
  logits_ = Tensor::empty({rows, config_.vocab_size}, decoder_output_.dtype(), device);
  linear_forward(logits_, decoder_output_, weights.shared_embedding,
                 weights.logits_bias.reshape({config_.vocab_size}), Activation::kNone);
}

PendingCrossEntropySums TransformerTraining::forward(const TransformerWeights& weights,
                                                     const ModelInputs& inputs,
                                                     const DropoutSettings& dropout) {
  forward_to_logits(weights, inputs, dropout);
  return cross_entropy_forward(logits_, logits_, inputs.target_output.reshape({logits_.dim(0)}),
                               config_.label_smoothing, config_.pad_id);
}

void TransformerTraining::backward(TransformerWeights& grads, const TransformerWeights& weights,
                                   float dloss, GradientListener* listener) {
  require_forward_pass();
  // In place: the log-probabilities are not needed after.
  cross_entropy_backward(logits_, logits_, inputs_.target_output.reshape({logits_.dim(0)}),
                         config_.label_smoothing, config_.pad_id, dloss);
  backward_from_logits(grads, weights, listener);
}

PendingCrossEntropySums TransformerTraining::forward_backward(TransformerWeights& grads,
                                                              const TransformerWeights& weights,
                                                              const ModelInputs& inputs,
                                                              const DropoutSettings& dropout,
                                                              float dloss,
                                                              GradientListener* listener) {
  forward_to_logits(weights, inputs, dropout);
  PendingCrossEntropySums sums = cross_entropy_forward_backward(
      logits_, logits_, inputs.target_output.reshape({logits_.dim(0)}), config_.label_smoothing,
      config_.pad_id, dloss);
  backward_from_logits(grads, weights, listener);
  return sums;
}

void TransformerTraining::require_forward_pass() const {
  if (!logits_.defined() || decoder_.empty()) {
    throw std::logic_error(
        "TransformerTraining::backward: no forward pass to go back through (each forward's "
        "activations serve one backward, and release_activations() drops them)");
  }
}

namespace {

double largest_magnitude(const Tensor& activations) {
  const Tensor host = activations.on(Device::kCPU).to_float32();
  const float* values = host.data<float>();
  double largest = 0;
  for (int64_t i = 0; i < host.numel(); ++i) {
    largest = std::max(largest, static_cast<double>(std::fabs(values[i])));
  }
  return largest;
}

}  // namespace

std::vector<std::pair<std::string, double>> TransformerTraining::activation_maxima() const {
  // The layers' outputs outlive the backward pass (the logits do not: it frees them).
  if (decoder_.empty()) {
    throw std::logic_error("TransformerTraining::activation_maxima: no forward pass kept");
  }
  std::vector<std::pair<std::string, double>> maxima;
  for (size_t layer = 0; layer < encoder_.size(); ++layer) {
    maxima.emplace_back(layer == 0 ? "encoder.embedding"
                                   : absl::StrCat("encoder.layer.", layer - 1),
                        largest_magnitude(encoder_[layer].input));
  }
  maxima.emplace_back("encoder.output", largest_magnitude(encoder_output_));
  for (size_t layer = 0; layer < decoder_.size(); ++layer) {
    maxima.emplace_back(layer == 0 ? "decoder.embedding"
                                   : absl::StrCat("decoder.layer.", layer - 1),
                        largest_magnitude(decoder_[layer].input));
  }
  maxima.emplace_back("decoder.output", largest_magnitude(decoder_output_));
  return maxima;
}

void TransformerTraining::release_activations() {
  inputs_ = ModelInputs();
  encoder_.clear();
  decoder_.clear();
  source_rows_ = target_rows_ = causal_lengths_ = Tensor();
  encoder_output_ = decoder_output_ = logits_ = Tensor();
}

void TransformerTraining::backward_from_logits(TransformerWeights& grads,
                                               const TransformerWeights& weights,
                                               GradientListener* listener) {
  require_forward_pass();
  const auto report = [listener](const auto& gradient) {
    if (listener != nullptr) listener->ready(gradient);
  };
  const int64_t rows = decoder_output_.dim(0);
  const int channels = config_.d_model;
  Tensor dy = Tensor::empty({rows, channels}, decoder_output_.dtype(), decoder_output_.device());
  Tensor dlogits_bias = grads.logits_bias.reshape({config_.vocab_size});
  linear_backward(dy, grads.shared_embedding, dlogits_bias, logits_, decoder_output_,
                  weights.shared_embedding, GradientWrite::kOverwrite);
  logits_ = Tensor();
  report(grads.logits_bias);
  dy = dy.reshape(decoder_.back().input.shape());

  Tensor dencoder_output = zeros_like(encoder_output_);
  for (size_t l = weights.decoder.size(); l-- > 0;) {
    dy = decoder_layer_backward(grads.decoder[l], dencoder_output, dy, decoder_[l],
                                weights.decoder[l], static_cast<int64_t>(l));
    report(grads.decoder[l]);
  }
  const DropoutSite target_embedding = site(kDecoderStack, -1, 0);
  dropout_backward(dy, dy, target_embedding.p, target_embedding.key);
  const bool learned = config_.positional == PositionalEncoding::kLearned;
  Tensor no_positions;
  embedding_backward(grads.shared_embedding, learned ? grads.decoder_positions : no_positions,
                     dy, inputs_.target_input, std::sqrt(static_cast<float>(channels)));
  if (learned) report(grads.decoder_positions);

  Tensor dx = dencoder_output;
  for (size_t l = weights.encoder.size(); l-- > 0;) {
    dx = encoder_layer_backward(grads.encoder[l], dx, encoder_[l], weights.encoder[l],
                                static_cast<int64_t>(l));
    report(grads.encoder[l]);
  }
  const DropoutSite source_embedding = site(kEncoderStack, -1, 0);
  dropout_backward(dx, dx, source_embedding.p, source_embedding.key);
  embedding_backward(grads.shared_embedding, learned ? grads.encoder_positions : no_positions,
                     dx, inputs_.source_tokens, std::sqrt(static_cast<float>(channels)));
  if (learned) report(grads.encoder_positions);
  report(grads.shared_embedding);
}

}  // namespace xlate::trainer
