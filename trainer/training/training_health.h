// What shows at once that a run is not learning, logged with every progress report: how far
// each group of parameters moved in the step (the update/parameter ratio: Adam's updates are
// ~lr, so a group whose ratio is orders of magnitude off the others' is frozen or blown up),
// the largest activations of every layer, and a warning when the loss sits at the unigram
// entropy of the targets — the loss of a model that predicts token frequencies only, ignoring
// the source and the prefix. The medium recipe's GPU runs of 2026-11-28 sat at 7.0-7.3 for
// thousands of steps; the unigram entropy of their targets is 7.21 nats.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainer/data/token_corpus.h"
#include "trainer/model/flat_parameters.h"

namespace xlate::trainer {

// -Σ p log p over the target tokens of `corpus` (every pair's, and one end token each), nats.
double unigram_entropy(const TokenCorpus& corpus, int32_t eos_id);

// The group a parameter belongs to: its name without the layer index and the last component,
// e.g. "model.encoder.layers.3.self_attn.q_proj.weight" -> "encoder.self_attn.q_proj".
std::string parameter_group(const std::string& name);

// ‖after − before‖ / ‖before‖ over each group of `slices` (trainable ones; groups in the order
// they first appear), for flat float32 parameters before and after a step.
std::vector<std::pair<std::string, double>> update_ratios(
    const std::vector<ParameterSlice>& slices, const float* before, const float* after);

// Watches the training loss for a plateau at the unigram entropy.
class PlateauWatch {
 public:
  // A loss within kMargin nats of `entropy` for `steps` steps in a row is a plateau; steps 0
  // turns the watch off.
  static constexpr double kMargin = 0.3;
  PlateauWatch(double entropy, int64_t steps) : entropy_(entropy), steps_(steps) {}

  // The per-token loss (nll) of the report at `step`; a warning to log the first time the loss
  // has sat at the entropy for the watch's steps (once per plateau).
  std::optional<std::string> observe(int64_t step, double nll);

 private:
  double entropy_;
  int64_t steps_;
  std::optional<int64_t> plateau_since_;
  bool warned_ = false;
};

}  // namespace xlate::trainer
