// The paper's Transformer for training: a teacher-forced forward pass over whole batches that
// keeps its activations, the label-smoothed loss, and the backward pass into a gradient set of
// the same layout (FlatParameters). Built from trainer/model/blocks.h; the weights are those of
// engine/model_weights.h, so a trained model is what the engine loads.
// Legend: N sentences, S source positions, T target positions, C = d_model, V = vocabulary.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/model_config.h"
#include "engine/model_weights.h"
#include "engine/ops/training_ops.h"
#include "trainer/model/blocks.h"
#include "trainer/model/gradient_listener.h"

namespace xlate::trainer {

struct ModelInputs {
  Tensor source_tokens;   // int32 [N, S], padded
  Tensor source_lengths;  // int32 [N]
  Tensor target_input;    // int32 [N, T]: decoder start token + reference, padded
  Tensor target_output;   // int32 [N, T]: reference + EOS, pad_id where there is no token
  Tensor target_lengths;  // int32 [N]
};

// What makes one forward pass's dropout masks: all zero probabilities for evaluation.
struct DropoutSettings {
  float residual = 0.f;    // P_drop: sub-layer outputs and embedding sums
  float activation = 0.f;  // inside the feed-forward network, after the ReLU
  uint64_t seed = 0;
  int64_t step = 0;
  int64_t micro_batch = 0;
  int rank = 0;
};

class TransformerTraining {
 public:
  explicit TransformerTraining(const ModelConfig& config);

  // The loss sums of the batch (on a GPU read when asked: after backward() has been queued);
  // keeps the activations for backward(). Runs on the weights' device; `inputs` must be there
  // too (the activations are allocated there). The activations take the weights' dtype: float32,
  // or on a GPU float16 / bfloat16 (the weights a ParameterCopy of the float32 master; the
  // gradients stay float32).
  PendingCrossEntropySums forward(const TransformerWeights& weights, const ModelInputs& inputs,
                                  const DropoutSettings& dropout);
  // grads += dloss · ∂(Σ label-smoothed loss)/∂weights for the last forward() batch. The sum
  // (not the mean) so that micro-batches and ranks add up; the trainer divides by the tokens.
  // `listener` (optional) hears of each gradient tensor as soon as this pass is done with it:
  // the logits bias first, the decoder layers from the last, the encoder layers from the last,
  // the (learned) position tables, and the shared embedding at the very end.
  void backward(TransformerWeights& grads, const TransformerWeights& weights, float dloss,
                GradientListener* listener = nullptr);
  // forward() then backward() with the loss's gradient taken in the forward's last pass over
  // the logits (cross_entropy_forward_backward): no log-probabilities are written and read
  // back. The same sums and gradients; what a training step runs.
  PendingCrossEntropySums forward_backward(TransformerWeights& grads,
                                           const TransformerWeights& weights,
                                           const ModelInputs& inputs,
                                           const DropoutSettings& dropout, float dloss,
                                           GradientListener* listener = nullptr);

  // Drops what the last forward pass kept for the backward (every layer's activations, the
  // logits, the batch): between steps, and before validation's translations, that memory is
  // free for other tensors. backward() needs a forward() after this.
  void release_activations();

  // The largest |x| of each layer's output in the last forward pass (on a GPU, copied to the
  // host: a logging step's cost): "encoder.embedding" (the first layer's input),
  // "encoder.layer.N", likewise for the decoder, and the stacks' final outputs. Before
  // release_activations() (after backward() too).
  std::vector<std::pair<std::string, double>> activation_maxima() const;

 private:
  // The residual stream between sub-layers. Post-norm: one tensor, each sub-layer's normalised
  // output, the next one's residual and input alike. Pre-norm: the residual sum, and its
  // normalisation by the next sub-layer's layer norm, that sub-layer's input.
  struct Stream {
    Tensor residual;
    Tensor input;
  };
  // Their gradients, going back (post-norm: one tensor; pre-norm: residual undefined until the
  // first layer norm from the top has given it a value).
  using GradientStream = Stream;

  struct EncoderLayerCache {
    Tensor input;  // [N, S, C] the self-attention's input (pre-norm: normalised)
    AttentionCache attention;
    ResidualNormCache attention_norm;
    Tensor attention_output;  // [N, S, C]
    FeedForwardCache ffn;
    ResidualNormCache ffn_norm;
  };
  struct DecoderLayerCache {
    Tensor input;  // [N, T, C] the self-attention's input (pre-norm: normalised)
    AttentionCache self_attention;
    ResidualNormCache self_norm;
    Tensor self_output;
    AttentionCache cross_attention;
    ResidualNormCache cross_norm;
    Tensor cross_output;
    FeedForwardCache ffn;
    ResidualNormCache ffn_norm;
  };

  DropoutSite site(int stack, int64_t layer, int slot, bool activation = false) const;
  // Throws std::logic_error unless a forward pass's activations are there to go back through.
  void require_forward_pass() const;
  // The forward up to the logits [N·T, V], left in logits_.
  void forward_to_logits(const TransformerWeights& weights, const ModelInputs& inputs,
                         const DropoutSettings& dropout);
  // The backward from the loss's gradient with respect to the logits, in logits_.
  void backward_from_logits(TransformerWeights& grads, const TransformerWeights& weights,
                            GradientListener* listener);
  // After a sub-layer: residual + Dropout(sublayer) normalised by the sub-layer's own layer
  // norm (post-norm) or by the next one's (pre-norm: `next`, which the next sub-layer's input
  // is, or a stack's final norm). `sublayer` is overwritten by the sum.
  Stream close_sublayer(ResidualNormCache& cache, const Stream& stream, Tensor& sublayer,
                        const LayerNormWeights& own, const LayerNormWeights& next,
                        DropoutSite dropout) const;
  // Its backward: from the gradients after it, `g` becomes those before it (the input's a zero
  // tensor, which the sub-layer's backward adds its input gradient to); returns d(sublayer).
  Tensor open_sublayer(GradientStream& g, LayerNormWeights& own_grads,
                       LayerNormWeights& next_grads, const ResidualNormCache& cache,
                       const LayerNormWeights& own, const LayerNormWeights& next) const;
  // A stack's first layer norm (pre-norm) over its dropped-out embedding, or the dropout alone.
  Stream start_stack(ResidualNormCache& cache, Tensor embedded, const LayerNormWeights& first,
                     DropoutSite dropout) const;
  // Its backward: the embedding's gradient.
  Tensor start_stack_backward(GradientStream& g, LayerNormWeights& first_grads,
                              const ResidualNormCache& cache, const LayerNormWeights& first,
                              DropoutSite dropout) const;
  // `next` is the norm after the layer (pre-norm: the next layer's first, or the final norm).
  Stream encoder_layer_forward(EncoderLayerCache& cache, const EncoderLayerWeights& w,
                               const Stream& x, const LayerNormWeights& next, int64_t layer);
  void encoder_layer_backward(EncoderLayerWeights& g, LayerNormWeights& next_grads,
                              GradientStream& dx, const EncoderLayerCache& cache,
                              const EncoderLayerWeights& w, const LayerNormWeights& next,
                              int64_t layer);
  Stream decoder_layer_forward(DecoderLayerCache& cache, const DecoderLayerWeights& w,
                               const Stream& x, const LayerNormWeights& next, int64_t layer);
  void decoder_layer_backward(DecoderLayerWeights& g, LayerNormWeights& next_grads,
                              Tensor& dencoder_output, GradientStream& dx,
                              const DecoderLayerCache& cache, const DecoderLayerWeights& w,
                              const LayerNormWeights& next, int64_t layer);

  ModelConfig config_;
  // State of the last forward pass.
  ModelInputs inputs_;
  DropoutSettings dropout_;
  std::vector<EncoderLayerCache> encoder_;
  std::vector<DecoderLayerCache> decoder_;
  ResidualNormCache encoder_start_, decoder_start_;  // pre-norm: the stacks' first layer norms
  Tensor source_rows_;     // int32 [N, S], the key_rows of attention over source positions
  Tensor target_rows_;     // int32 [N, T]
  Tensor causal_lengths_;  // int32 [N], all T: the decoder's self-attention is causal only
  Tensor encoder_output_;  // [N, S, C]
  Tensor decoder_output_;  // [N·T, C]
  // [N·T, V]: the logits, then in place their log-probabilities, then the loss's gradient.
  Tensor logits_;
};

}  // namespace xlate::trainer
