// Label-smoothed cross entropy over the vocabulary (the paper's ε_ls): the target
// distribution puts 1 - ε on the reference token and ε / (V - 1) on every other token.
// Rows whose target is `ignore_id` (padding) contribute nothing. M rows, V classes.
#pragma once

#include <cstdint>

#include "engine/tensor.h"

namespace xlate::trainer {

struct CrossEntropySums {
  double loss = 0;     // Σ label-smoothed cross entropy, nats
  double nll = 0;      // Σ -log p(reference), nats (perplexity = exp(nll / tokens))
  int64_t tokens = 0;  // rows counted
};

// log_probs[M, V] = log_softmax(logits) (may alias logits); returns the sums.
// Ignored rows are left as they are.
// targets: int32 [M].
CrossEntropySums cross_entropy_forward(Tensor& log_probs, const Tensor& logits,
                                       const Tensor& targets, float smoothing, int ignore_id);

// dlogits[M, V] = dloss · (softmax - q) on counted rows, 0 on ignored rows, for the loss
// Σ rows (the sum, not the mean: the caller scales by the step's token count). May alias.
void cross_entropy_backward(Tensor& dlogits, const Tensor& log_probs, const Tensor& targets,
                            float smoothing, int ignore_id, float dloss);

}  // namespace xlate::trainer
