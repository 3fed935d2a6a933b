// The ops that training adds to the engine's (engine/ops/ops.h): backward passes, dropout, the
// loss and the optimiser's update. Same contract as ops.h: device-free, checked in
// training_ops.cc, then the body of the tensors' device through the backend table
// (engine/ops/backend.h): ops/cpu/*_cpu.cc (the reference) or ops/cuda/training_ops_cuda.cc over
// kernels/. All tensors of one call live on one device; float tensors are float32 on both
// backends, except where an op says its activations may be float16 / bfloat16 on a backend that
// stores them (CUDA: the steps toward 16-bit activations in training). The forwards are the
// engine's own ops (add_layer_norm_forward saves what layer_norm_backward needs).
//
// Gradient rule: parameter gradients are accumulated (+=); an input gradient is overwritten (=)
// unless a GradientWrite argument says it accumulates. Every reduction runs in a fixed order,
// whatever the thread or block count: a run is bit-reproducible on its device.
// Legend as in ops.h: M rows, K input features, C channels, V classes, N sentences, T query
// positions, S key positions, h heads.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

#include "engine/ops/ops.h"
#include "engine/tensor.h"

namespace xlate {

enum class GradientWrite { kOverwrite, kAccumulate };

// For out[M, N] = inp[M, K] · weight[N, K]ᵀ + bias[N]:
// dinp[M, K] (=/+= per `write`) = dout[M, N] · weight; dweight[N, K] += doutᵀ · inp;
// dbias[N] += Σ_rows dout. dinp and dbias may be undefined (not wanted). dout, inp, weight and
// dinp share one float dtype (16-bit where the backend stores it: products summed in float32);
// dweight and dbias are float32.
void linear_backward(Tensor& dinp, Tensor& dweight, Tensor& dbias, const Tensor& dout,
                     const Tensor& inp, const Tensor& weight, GradientWrite write);

// dinp = dout where out > 0, else 0 (out is ReLU's output, any shape). May alias dout. One
// float dtype (16-bit where the backend stores it).
void relu_backward(Tensor& dinp, const Tensor& dout, const Tensor& out);

// Backward of out = LayerNorm(residual + Dropout(inp)) · gamma + beta (add_layer_norm_forward
// with `saved`, its LayerNormTraining): dresidual[M, C] = ∂/∂(the sum), the residual's gradient;
// dinp[M, C] = dresidual through inp's dropout (dropout_backward's), inp's; dgamma[C] +=
// Σ dout · x̂; dbeta[C] += Σ dout. dresidual and dinp may alias dout, not each other. sum,
// dout, dresidual, dinp and gamma share one float dtype (16-bit where the backend stores it);
// mean, rstd, dgamma and dbeta are float32.
// residual_write kAccumulate: the sum has a second use whose gradient dresidual holds on entry
// (a pre-norm layer's residual stream, which the next sub-layer adds to as well as normalises):
// dresidual becomes that plus LayerNorm's part, and dinp is the total through the dropout.
// dresidual may not alias dout then.
void layer_norm_backward(Tensor& dresidual, Tensor& dinp, Tensor& dgamma, Tensor& dbeta,
                         const Tensor& dout, const LayerNormTraining& saved, const Tensor& gamma,
                         GradientWrite residual_write = GradientWrite::kOverwrite);

// Backward of multi-head attention over whole sequences, batch-major: q [N, T, h·d_k],
// k [N, S, h·d_k], v [N, S, h·d_v], the forward's probabilities probs [N, h, T, S] (0 where
// masked) and dout [N, T, h·d_v] give dq, dk, dv (=) in the shapes of q, k, v. All but probs
// (float32) share one float dtype (16-bit where the backend stores it).
void attention_backward(Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& dout,
                        const Tensor& probs, const Tensor& q, const Tensor& k, const Tensor& v,
                        int heads);

// Inverted dropout whose mask is a pure function of (key, element index)
// (rules/dropout_mask.h): out = inp / (1 - p) where kept, 0 where dropped; p = 0 copies.
// The same key draws the same mask on every backend, so the backward recomputes it.
// May alias. 0 <= p < 1. All tensors of one float dtype: float32, or on a backend that stores
// them (CUDA) float16 / bfloat16 too (the product in float32, rounded once).
void dropout_forward(Tensor& out, const Tensor& inp, float p, uint64_t key);
void dropout_backward(Tensor& dinp, const Tensor& dout, float p, uint64_t key);
// The feed-forward network's Dropout(ReLU(x)) backward in one pass: dinp = dropout_backward of
// dout where relu_out > 0, else 0 (relu_backward after dropout_backward; relu_out is ReLU's
// output, of dout's size). May alias dout.
void dropout_relu_backward(Tensor& dinp, const Tensor& dout, const Tensor& relu_out, float p,
                           uint64_t key);

// Label-smoothed cross entropy over V classes (the paper's ε_ls): the target distribution puts
// 1 - ε on the reference and ε / (V - 1) on every other class. Rows whose target is `ignore_id`
// (padding) count nothing.
struct CrossEntropySums {
  double loss = 0;     // Σ label-smoothed cross entropy, nats
  double nll = 0;      // Σ -log p(reference), nats (perplexity = exp(nll / tokens))
  int64_t tokens = 0;  // rows counted
};

// The sums of one cross_entropy_forward. A device body leaves them on the device until they are
// read, so that a training step queues its whole backward pass before it waits for the loss
// (read in the step's only wait, with the gradient's norm).
class PendingCrossEntropySums {
 public:
  PendingCrossEntropySums() = default;  // no rows: zero sums
  explicit PendingCrossEntropySums(const CrossEntropySums& sums) : sums_(sums) {}
  // `read` copies the sums to the host, waiting for the device; it runs once, at the first read().
  explicit PendingCrossEntropySums(std::function<CrossEntropySums()> read)
      : read_(std::move(read)) {}

  const CrossEntropySums& read();

 private:
  std::function<CrossEntropySums()> read_;
  CrossEntropySums sums_;
};

// log_probs[M, V] = log_softmax(logits[M, V]) on counted rows (may alias logits; ignored rows
// are left as they are), and the sums. targets int32 [M]. logits and log_probs (and the
// gradients of the two ops below) of one float dtype, 16-bit where the backend stores it
// (computed in float32, the sums in double). The sums do not depend on log_probs
// once the call returns: a backward pass may overwrite them before the sums are read.
PendingCrossEntropySums cross_entropy_forward(Tensor& log_probs, const Tensor& logits,
                                              const Tensor& targets, float smoothing,
                                              int ignore_id);

// dlogits[M, V] = dloss · (softmax - target distribution) on counted rows, 0 on ignored rows,
// for the loss summed over rows. May alias log_probs.
void cross_entropy_backward(Tensor& dlogits, const Tensor& log_probs, const Tensor& targets,
                            float smoothing, int ignore_id, float dloss);

// cross_entropy_forward and cross_entropy_backward in one pass over the logits, for a training
// step that knows dloss (its loss scale) before the forward: dlogits[M, V] as
// cross_entropy_backward's (may alias logits), no log-probabilities kept; the sums as
// cross_entropy_forward's.
PendingCrossEntropySums cross_entropy_forward_backward(Tensor& dlogits, const Tensor& logits,
                                                       const Tensor& targets, float smoothing,
                                                       int ignore_id, float dloss);

// Backward of embedding_forward with its positions at 0: dtable[V, C] += scale · dout rows
// gathered by token, each row summed in the order of the tokens (no atomics);
// dpositions[P, C] += Σ_n dout[n, t] (skipped when undefined: sinusoidal positions are fixed).
// tokens int32 [N, T] (ids in [0, V)); dout [N, T, C] (16-bit where the backend stores it);
// dtable and dpositions float32.
void embedding_backward(Tensor& dtable, Tensor& dpositions, const Tensor& dout,
                        const Tensor& tokens, float scale);

// Σ x² over every element of `x`, in double, in fixed blocks summed in order (the gradient's
// global norm for clipping); on a device, returned after waiting for it.
double sum_of_squares(const Tensor& x);

// One Adam step's constants: m = β1·m + (1-β1)·g', v = β2·v + (1-β2)·g'²,
// w -= step_size · m / (sqrt(v) · inverse_sqrt_correction2 + ε), with g' = g · gradient_scale.
struct AdamStep {
  float beta1;
  float beta2;
  float step_size;                 // lr / (1 - β1^t)
  float inverse_sqrt_correction2;  // 1 / sqrt(1 - β2^t)
  float epsilon;
  float gradient_scale;            // on g before everything: 1 / tokens times clipping
};

// Adam over one flat range: weights, first_moment, second_moment, gradients float32 [P].
void adam_update(Tensor& weights, Tensor& first_moment, Tensor& second_moment,
                 const Tensor& gradients, const AdamStep& step);

}  // namespace xlate
