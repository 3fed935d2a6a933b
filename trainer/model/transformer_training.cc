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

// The layer norm after layer `layer` of a stack in pre-norm: the next layer's first, or the
// stack's final norm after its last layer (unused in post-norm). Of weights or of gradients.
template <typename Weights>
auto& norm_after(Weights& weights, bool encoder, size_t layer) {
  if (encoder) {
    return layer + 1 < weights.encoder.size() ? weights.encoder[layer + 1].self_attention_norm
                                              : weights.encoder_final_norm;
  }
  return layer + 1 < weights.decoder.size() ? weights.decoder[layer + 1].self_attention_norm
                                            : weights.decoder_final_norm;
}

}  // namespace

TransformerTraining::TransformerTraining(const ModelConfig& config) : config_(config) {}

DropoutSite TransformerTraining::site(int stack, int64_t layer, int slot, bool activation) const {
  const int64_t index = ((stack * 1024 + layer + 1) * 8 + slot) * 2 + (activation ? 1 : 0);
  const float p = activation ? dropout_.activation : dropout_.residual;
  return {p, dropout_key(dropout_.seed, dropout_.step, dropout_.micro_batch, dropout_.rank,
                         index)};
}

TransformerTraining::Stream TransformerTraining::close_sublayer(
    ResidualNormCache& cache, const Stream& stream, Tensor& sublayer, const LayerNormWeights& own,
    const LayerNormWeights& next, DropoutSite dropout) const {
  Tensor out = residual_norm_forward(cache, stream.residual, sublayer,
                                     config_.pre_norm ? next : own, dropout);
  return {config_.pre_norm ? cache.sum : out, out};
}

Tensor TransformerTraining::open_sublayer(GradientStream& g, LayerNormWeights& own_grads,
                                          LayerNormWeights& next_grads,
                                          const ResidualNormCache& cache,
                                          const LayerNormWeights& own,
                                          const LayerNormWeights& next) const {
  if (!config_.pre_norm) {
    Tensor dsublayer;
    g.residual = g.input = residual_norm_backward(dsublayer, own_grads, g.input, cache, own);
    return dsublayer;
  }
  Tensor dsublayer = residual_norm_backward_into(g.residual, next_grads, g.input, cache, next);
  g.input = zeros_like(g.residual);
  return dsublayer;
}

TransformerTraining::Stream TransformerTraining::start_stack(ResidualNormCache& cache,
                                                             Tensor embedded,
                                                             const LayerNormWeights& first,
                                                             DropoutSite dropout) const {
  if (!config_.pre_norm) {
    dropout_forward(embedded, embedded, dropout.p, dropout.key);
    return {embedded, embedded};
  }
  const Stream nothing{zeros_like(embedded), Tensor()};
  return close_sublayer(cache, nothing, embedded, first, first, dropout);
}

Tensor TransformerTraining::start_stack_backward(GradientStream& g, LayerNormWeights& first_grads,
                                                 const ResidualNormCache& cache,
                                                 const LayerNormWeights& first,
                                                 DropoutSite dropout) const {
  if (!config_.pre_norm) {
    dropout_backward(g.input, g.input, dropout.p, dropout.key);
    return g.input;
  }
  return open_sublayer(g, first_grads, first_grads, cache, first, first);
}

TransformerTraining::Stream TransformerTraining::encoder_layer_forward(
    EncoderLayerCache& cache, const EncoderLayerWeights& w, const Stream& x,
    const LayerNormWeights& next, int64_t layer) {
  cache.input = x.input;
  const AttentionInputs inputs{x.input,       x.input, source_rows_, inputs_.source_lengths,
                               config_.encoder_heads, false};
  Tensor attention = attention_block_forward(cache.attention, w.self_attention, inputs);
  const Stream after_attention =
      close_sublayer(cache.attention_norm, x, attention, w.self_attention_norm, w.ffn_norm,
                     site(kEncoderStack, layer, kSelfAttention));
  cache.attention_output = after_attention.input;
  Tensor ffn = feed_forward_forward(cache.ffn, w.ffn_inner, w.ffn_outer, after_attention.input,
                                    site(kEncoderStack, layer, kFeedForward, true));
  return close_sublayer(cache.ffn_norm, after_attention, ffn, w.ffn_norm, next,
                        site(kEncoderStack, layer, kFeedForward));
}

void TransformerTraining::encoder_layer_backward(EncoderLayerWeights& g,
                                                 LayerNormWeights& next_grads,
                                                 GradientStream& dx,
                                                 const EncoderLayerCache& cache,
                                                 const EncoderLayerWeights& w,
                                                 const LayerNormWeights& next, int64_t layer) {
  const Tensor dffn = open_sublayer(dx, g.ffn_norm, next_grads, cache.ffn_norm, w.ffn_norm, next);
  feed_forward_backward(dx.input, g.ffn_inner, g.ffn_outer, dffn, cache.ffn, w.ffn_inner,
                        w.ffn_outer, cache.attention_output,
                        site(kEncoderStack, layer, kFeedForward, true));
  const Tensor dattention = open_sublayer(dx, g.self_attention_norm, g.ffn_norm,
                                          cache.attention_norm, w.self_attention_norm,
                                          w.ffn_norm);
  const AttentionInputs inputs{cache.input, cache.input, source_rows_, inputs_.source_lengths,
                               config_.encoder_heads, false};
  attention_block_backward(dx.input, dx.input, g.self_attention, dattention, cache.attention,
                           w.self_attention, inputs);
}

TransformerTraining::Stream TransformerTraining::decoder_layer_forward(
    DecoderLayerCache& cache, const DecoderLayerWeights& w, const Stream& x,
    const LayerNormWeights& next, int64_t layer) {
  cache.input = x.input;
  const AttentionInputs self{x.input, x.input, target_rows_, causal_lengths_,
                             config_.decoder_heads, true};
  Tensor attention = attention_block_forward(cache.self_attention, w.self_attention, self);
  const Stream after_self =
      close_sublayer(cache.self_norm, x, attention, w.self_attention_norm,
                     w.cross_attention_norm, site(kDecoderStack, layer, kSelfAttention));
  cache.self_output = after_self.input;
  const AttentionInputs cross{after_self.input, encoder_output_, source_rows_,
                              inputs_.source_lengths, config_.decoder_heads, false};
  Tensor context = attention_block_forward(cache.cross_attention, w.cross_attention, cross);
  const Stream after_cross =
      close_sublayer(cache.cross_norm, after_self, context, w.cross_attention_norm, w.ffn_norm,
                     site(kDecoderStack, layer, kCrossAttention));
  cache.cross_output = after_cross.input;
  Tensor ffn = feed_forward_forward(cache.ffn, w.ffn_inner, w.ffn_outer, after_cross.input,
                                    site(kDecoderStack, layer, kFeedForward, true));
  return close_sublayer(cache.ffn_norm, after_cross, ffn, w.ffn_norm, next,
                        site(kDecoderStack, layer, kFeedForward));
}

void TransformerTraining::decoder_layer_backward(DecoderLayerWeights& g,
                                                 LayerNormWeights& next_grads,
                                                 Tensor& dencoder_output, GradientStream& dx,
                                                 const DecoderLayerCache& cache,
                                                 const DecoderLayerWeights& w,
                                                 const LayerNormWeights& next, int64_t layer) {
  const Tensor dffn = open_sublayer(dx, g.ffn_norm, next_grads, cache.ffn_norm, w.ffn_norm, next);
  feed_forward_backward(dx.input, g.ffn_inner, g.ffn_outer, dffn, cache.ffn, w.ffn_inner,
                        w.ffn_outer, cache.cross_output,
                        site(kDecoderStack, layer, kFeedForward, true));
  const Tensor dcontext = open_sublayer(dx, g.cross_attention_norm, g.ffn_norm, cache.cross_norm,
                                        w.cross_attention_norm, w.ffn_norm);
  const AttentionInputs cross{cache.self_output, encoder_output_, source_rows_,
                              inputs_.source_lengths, config_.decoder_heads, false};
  attention_block_backward(dx.input, dencoder_output, g.cross_attention, dcontext,
                           cache.cross_attention, w.cross_attention, cross);
  const Tensor dattention = open_sublayer(dx, g.self_attention_norm, g.cross_attention_norm,
                                          cache.self_norm, w.self_attention_norm,
                                          w.cross_attention_norm);
  const AttentionInputs self{cache.input, cache.input, target_rows_, causal_lengths_,
                             config_.decoder_heads, true};
  attention_block_backward(dx.input, dx.input, g.self_attention, dattention, cache.self_attention,
                           w.self_attention, self);
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
  Stream x = start_stack(encoder_start_,
                         embed(inputs.source_tokens, weights.shared_embedding,
                               weights.encoder_positions, channels),
                         weights.encoder.front().self_attention_norm, site(kEncoderStack, -1, 0));
  encoder_.resize(weights.encoder.size());
  for (size_t l = 0; l < weights.encoder.size(); ++l) {
    x = encoder_layer_forward(encoder_[l], weights.encoder[l], x, norm_after(weights, true, l),
                              static_cast<int64_t>(l));
  }
  encoder_output_ = x.input;

  Stream y = start_stack(decoder_start_,
                         embed(inputs.target_input, weights.shared_embedding,
                               weights.decoder_positions, channels),
                         weights.decoder.front().self_attention_norm, site(kDecoderStack, -1, 0));
  decoder_.resize(weights.decoder.size());
  for (size_t l = 0; l < weights.decoder.size(); ++l) {
    y = decoder_layer_forward(decoder_[l], weights.decoder[l], y, norm_after(weights, false, l),
                              static_cast<int64_t>(l));
  }
  const int64_t rows = y.input.dim(0) * y.input.dim(1);
  decoder_output_ = y.input.reshape({rows, channels});
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
  Tensor dy_output =
      Tensor::empty({rows, channels}, decoder_output_.dtype(), decoder_output_.device());
  Tensor dlogits_bias = grads.logits_bias.reshape({config_.vocab_size});
  linear_backward(dy_output, grads.shared_embedding, dlogits_bias, logits_, decoder_output_,
                  weights.shared_embedding, GradientWrite::kOverwrite);
  logits_ = Tensor();
  report(grads.logits_bias);
  // Post-norm: one gradient for the residual and the input; pre-norm: the input's alone (the
  // final norm's input is the residual stream's only use above the last layer).
  const auto top_of_stack = [this](const Tensor& doutput) {
    return config_.pre_norm ? GradientStream{Tensor(), doutput}
                            : GradientStream{doutput, doutput};
  };
  // A layer's gradients are final once its backward is done, except (pre-norm) its first layer
  // norm's: the layer below's last sub-layer (or the stack's start) normalises with it.
  const auto report_layer = [&](const auto& g, const LayerNormWeights& next_grads) {
    if (listener == nullptr) return;
    if (!config_.pre_norm) {
      listener->ready(g);
      return;
    }
    listener->ready_but_first_norm(g);
    listener->ready(next_grads);
  };
  GradientStream dy = top_of_stack(dy_output.reshape(decoder_.back().input.shape()));
  Tensor dencoder_output = zeros_like(encoder_output_);
  for (size_t l = weights.decoder.size(); l-- > 0;) {
    LayerNormWeights& next_grads = norm_after(grads, false, l);
    decoder_layer_backward(grads.decoder[l], next_grads, dencoder_output, dy, decoder_[l],
                           weights.decoder[l], norm_after(weights, false, l),
                           static_cast<int64_t>(l));
    report_layer(grads.decoder[l], next_grads);
  }
  const Tensor dtarget_embedding = start_stack_backward(
      dy, grads.decoder.front().self_attention_norm, decoder_start_,
      weights.decoder.front().self_attention_norm, site(kDecoderStack, -1, 0));
  if (config_.pre_norm) report(grads.decoder.front().self_attention_norm);
  const bool learned = config_.positional == PositionalEncoding::kLearned;
  Tensor no_positions;
  embedding_backward(grads.shared_embedding, learned ? grads.decoder_positions : no_positions,
                     dtarget_embedding, inputs_.target_input,
                     std::sqrt(static_cast<float>(channels)));
  if (learned) report(grads.decoder_positions);

  GradientStream dx = top_of_stack(dencoder_output);
  for (size_t l = weights.encoder.size(); l-- > 0;) {
    LayerNormWeights& next_grads = norm_after(grads, true, l);
    encoder_layer_backward(grads.encoder[l], next_grads, dx, encoder_[l], weights.encoder[l],
                           norm_after(weights, true, l), static_cast<int64_t>(l));
    report_layer(grads.encoder[l], next_grads);
  }
  const Tensor dsource_embedding = start_stack_backward(
      dx, grads.encoder.front().self_attention_norm, encoder_start_,
      weights.encoder.front().self_attention_norm, site(kEncoderStack, -1, 0));
  if (config_.pre_norm) report(grads.encoder.front().self_attention_norm);
  embedding_backward(grads.shared_embedding, learned ? grads.encoder_positions : no_positions,
                     dsource_embedding, inputs_.source_tokens,
                     std::sqrt(static_cast<float>(channels)));
  if (learned) report(grads.encoder_positions);
  report(grads.shared_embedding);
}

}  // namespace xlate::trainer
