// Argument checks of the training ops (engine/ops/training_ops.h), then their bodies in the
// backend of the tensors' device.
#include "engine/ops/training_ops.h"

#include <string>

#include "engine/ops/backend.h"
#include "engine/ops/op_checks.h"

namespace xlate {
namespace {

int64_t rows_of(const Tensor& tensor) { return tensor.numel() / tensor.dim(-1); }

// Host targets must be class ids or ignore_id (device targets are not read back).
void require_targets(const Tensor& targets, const Tensor& like, int64_t rows, int64_t classes,
                     int ignore_id, const char* op) {
  require_int32_like(targets, like, op, "targets");
  require(targets.numel() == rows, op, "targets must hold one id per row");
  if (!on_host(targets)) return;
  for (int64_t m = 0; m < rows; ++m) {
    const int32_t id = targets.data<int32_t>()[m];
    require(id == ignore_id || (id >= 0 && id < classes), op,
            "target " + std::to_string(id) + " beyond the " + std::to_string(classes) +
                " classes");
  }
}

// out and inp of one size, device and float dtype (16-bit where the backend stores it),
// 0 <= p < 1.
void require_dropout(const Tensor& out, const Tensor& inp, float p, const char* op) {
  require(inp.defined(), op, "the input is undefined");
  require(p >= 0.f && p < 1.f, op, "p must be in [0, 1), not " + std::to_string(p));
  require_float_like(inp, inp, op, "the input");
  require_float_like(out, inp, inp.numel(), op, "the output");
}

}  // namespace

void linear_backward(Tensor& dinp, Tensor& dweight, Tensor& dbias, const Tensor& dout,
                     const Tensor& inp, const Tensor& weight, GradientWrite write) {
  const char* op = "linear_backward";
  require(weight.defined() && weight.rank() == 2, op, "weight must be [N, K]");
  const int64_t outputs = weight.dim(0), inputs = weight.dim(1);
  require(dout.defined() && dout.dim(-1) == outputs, op, "dout's last axis must be N");
  const int64_t rows = rows_of(dout);
  require_float_like(weight, weight, outputs * inputs, op, "weight");
  require_float_like(dout, weight, rows * outputs, op, "dout");
  require_float_like(inp, weight, rows * inputs, op, "inp");
  require_float32(dweight, weight, outputs * inputs, op, "dweight");
  if (dinp.defined()) require_float_like(dinp, weight, rows * inputs, op, "dinp");
  if (dbias.defined()) require_float32(dbias, weight, outputs, op, "dbias");
  backend_of(weight).linear_backward(dinp, dweight, dbias, dout, inp, weight, write);
}

void relu_backward(Tensor& dinp, const Tensor& dout, const Tensor& out) {
  const char* op = "relu_backward";
  require(out.defined(), op, "out is undefined");
  require_float_like(out, out, op, "out");
  require_float_like(dout, out, out.numel(), op, "dout");
  require_float_like(dinp, out, out.numel(), op, "dinp");
  backend_of(out).relu_backward(dinp, dout, out);
}

void layer_norm_backward(Tensor& dresidual, Tensor& dinp, Tensor& dgamma, Tensor& dbeta,
                         const Tensor& dout, const LayerNormTraining& saved, const Tensor& gamma,
                         GradientWrite residual_write) {
  const char* op = "layer_norm_backward";
  const Tensor& sum = saved.sum;
  require(sum.defined() && sum.rank() >= 1, op, "the saved sum is undefined");
  const int64_t channels = sum.dim(-1), rows = rows_of(sum);
  require_float_like(sum, sum, op, "sum");
  require_float_like(dout, sum, rows * channels, op, "dout");
  require_float_like(dresidual, sum, rows * channels, op, "dresidual");
  require_float_like(dinp, sum, rows * channels, op, "dinp");
  require(dresidual.raw_data() != dinp.raw_data(), op, "dresidual and dinp must differ");
  require(residual_write == GradientWrite::kOverwrite || dresidual.raw_data() != dout.raw_data(),
          op, "an accumulated dresidual must not alias dout");
  require_float32(saved.mean, sum, rows, op, "mean");
  require_float32(saved.rstd, sum, rows, op, "rstd");
  require_float_like(gamma, sum, channels, op, "gamma");
  require_float32(dgamma, sum, channels, op, "dgamma");
  require_float32(dbeta, sum, channels, op, "dbeta");
  require(saved.dropout >= 0.f && saved.dropout < 1.f, op, "dropout must be in [0, 1)");
  backend_of(sum).layer_norm_backward(dresidual, dinp, dgamma, dbeta, dout, saved, gamma,
                                      residual_write);
}

void attention_backward(Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& dout,
                        const Tensor& probs, const Tensor& q, const Tensor& k, const Tensor& v,
                        int heads) {
  const char* op = "attention_backward";
  require(q.defined() && k.defined() && v.defined() && q.rank() == 3 && k.rank() == 3 &&
              v.rank() == 3,
          op, "q, k and v must be [N, T or S, h·d]");
  require(heads > 0 && q.dim(2) % heads == 0 && v.dim(2) % heads == 0 && k.dim(2) == q.dim(2),
          op, "widths must split into the heads (k as wide as q)");
  const int64_t sentences = q.dim(0), queries = q.dim(1), keys = k.dim(1);
  require(k.dim(0) == sentences && v.dim(0) == sentences && v.dim(1) == keys, op,
          "q, k and v disagree on N or S");
  require_float_like(q, q, op, "q");
  require_float_like(k, q, k.numel(), op, "k");
  require_float_like(v, q, v.numel(), op, "v");
  require_float_like(dout, q, sentences * queries * v.dim(2), op, "dout");
  require_float32(probs, q, sentences * heads * queries * keys, op, "probs");
  require_float_like(dq, q, q.numel(), op, "dq");
  require_float_like(dk, q, k.numel(), op, "dk");
  require_float_like(dv, q, v.numel(), op, "dv");
  backend_of(q).attention_backward(dq, dk, dv, dout, probs, q, k, v, heads);
}

void dropout_forward(Tensor& out, const Tensor& inp, float p, uint64_t key) {
  require_dropout(out, inp, p, "dropout_forward");
  backend_of(inp).dropout_forward(out, inp, p, key);
}

void dropout_backward(Tensor& dinp, const Tensor& dout, float p, uint64_t key) {
  require_dropout(dinp, dout, p, "dropout_backward");
  backend_of(dout).dropout_backward(dinp, dout, p, key);
}

void dropout_relu_backward(Tensor& dinp, const Tensor& dout, const Tensor& relu_out, float p,
                           uint64_t key) {
  const char* op = "dropout_relu_backward";
  require_dropout(dinp, dout, p, op);
  require_float_like(relu_out, dout, dout.numel(), op, "relu_out");
  backend_of(dout).dropout_relu_backward(dinp, dout, relu_out, p, key);
}

namespace {

// What the cross-entropy ops check: scores [M, V] (logits or log-probabilities) of a float
// dtype (16-bit where the backend stores it), out of its size, dtype and device, targets int32
// [M] in [0, V) or ignore_id, smoothing in [0, 1).
void require_cross_entropy(const Tensor& out, const char* out_name, const Tensor& scores,
                           const char* scores_name, const Tensor& targets, float smoothing,
                           int ignore_id, const char* op) {
  require(scores.defined() && scores.rank() >= 1 && scores.dim(-1) > 0, op,
          std::string(scores_name) + " must be [M, V]");
  require(smoothing >= 0.f && smoothing < 1.f, op, "smoothing must be in [0, 1)");
  require_float_like(scores, scores, op, scores_name);
  require_float_like(out, scores, scores.numel(), op, out_name);
  require_targets(targets, scores, rows_of(scores), scores.dim(-1), ignore_id, op);
}

}  // namespace

const CrossEntropySums& PendingCrossEntropySums::read() {
  if (read_) {
    sums_ = read_();
    read_ = nullptr;  // drops the device buffers it held
  }
  return sums_;
}

PendingCrossEntropySums cross_entropy_forward(Tensor& log_probs, const Tensor& logits,
                                              const Tensor& targets, float smoothing,
                                              int ignore_id) {
  require_cross_entropy(log_probs, "log_probs", logits, "logits", targets, smoothing, ignore_id,
                        "cross_entropy_forward");
  return backend_of(logits).cross_entropy_forward(log_probs, logits, targets, smoothing,
                                                  ignore_id);
}

void cross_entropy_backward(Tensor& dlogits, const Tensor& log_probs, const Tensor& targets,
                            float smoothing, int ignore_id, float dloss) {
  require_cross_entropy(dlogits, "dlogits", log_probs, "log_probs", targets, smoothing,
                        ignore_id, "cross_entropy_backward");
  backend_of(log_probs).cross_entropy_backward(dlogits, log_probs, targets, smoothing, ignore_id,
                                               dloss);
}

PendingCrossEntropySums cross_entropy_forward_backward(Tensor& dlogits, const Tensor& logits,
                                                       const Tensor& targets, float smoothing,
                                                       int ignore_id, float dloss) {
  require_cross_entropy(dlogits, "dlogits", logits, "logits", targets, smoothing, ignore_id,
                        "cross_entropy_forward_backward");
  return backend_of(logits).cross_entropy_forward_backward(dlogits, logits, targets, smoothing,
                                                           ignore_id, dloss);
}

void embedding_backward(Tensor& dtable, Tensor& dpositions, const Tensor& dout,
                        const Tensor& tokens, float scale) {
  const char* op = "embedding_backward";
  require(dtable.defined() && dtable.rank() == 2, op, "dtable must be [V, C]");
  require(tokens.defined() && tokens.rank() == 2, op, "tokens must be [N, T]");
  const int64_t vocabulary = dtable.dim(0), channels = dtable.dim(1);
  const int64_t rows = tokens.dim(0), steps = tokens.dim(1);
  require_float32(dtable, dtable, vocabulary * channels, op, "dtable");
  require(dout.defined(), op, "dout is undefined");
  require_float_like(dout, dout, rows * steps * channels, op, "dout");
  require(dout.device() == dtable.device(), op, "dout is on another device");
  require_int32_like(tokens, dtable, op, "tokens");
  if (dpositions.defined()) {
    require(dpositions.rank() == 2 && dpositions.dim(1) == channels && dpositions.dim(0) >= steps,
            op, "dpositions must be [P >= T, C]");
    require_float32(dpositions, dtable, dpositions.numel(), op, "dpositions");
  }
  if (on_host(tokens)) {
    for (int64_t m = 0; m < rows * steps; ++m) {
      const int32_t id = tokens.data<int32_t>()[m];
      require(id >= 0 && id < vocabulary, op,
              "token " + std::to_string(id) + " beyond the " + std::to_string(vocabulary) +
                  "-row table");
    }
  }
  backend_of(dtable).embedding_backward(dtable, dpositions, dout, tokens, scale);
}

double sum_of_squares(const Tensor& x) {
  require(x.defined(), "sum_of_squares", "x is undefined");
  require_float32(x, x, x.numel(), "sum_of_squares", "x");
  return backend_of(x).sum_of_squares(x);
}

void adam_update(Tensor& weights, Tensor& first_moment, Tensor& second_moment,
                 const Tensor& gradients, const AdamStep& step) {
  const char* op = "adam_update";
  require(weights.defined(), op, "weights is undefined");
  const int64_t count = weights.numel();
  require_float32(weights, weights, count, op, "weights");
  require_float32(first_moment, weights, count, op, "first_moment");
  require_float32(second_moment, weights, count, op, "second_moment");
  require_float32(gradients, weights, count, op, "gradients");
  backend_of(weights).adam_update(weights, first_moment, second_moment, gradients, step);
}

}  // namespace xlate
