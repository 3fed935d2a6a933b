// Dynamic loss scaling (Micikevicius et al., "Mixed Precision Training", 2018; as apex and
// fairseq do it): the backward pass starts from `scale` instead of 1, so that small gradients
// stay above the underflow of reduced-precision products; the optimizer divides it out again.
// A step whose summed gradient is not finite (after the all-reduce, so every rank decides the
// same) is skipped and the scale halved; after `growth_interval` finite steps in a row the scale
// doubles. Scales are powers of two, so scaling and unscaling are exact in floating point: a
// float32 run with scaling equals one without until a gradient overflows, where it skips the
// step instead of stopping the run.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"

namespace xlate::trainer {

struct LossScalerOptions {
  double initial_scale = 128;     // 2^7; a power of two
  int64_t growth_interval = 2000; // finite steps in a row before the scale doubles
  double minimum_scale = 1e-4;    // a scale halved below this stops training
};

// What a checkpoint keeps so that a resumed run scales (and skips) exactly as an unbroken one.
struct LossScalerState {
  double scale = 1;
  int64_t finite_steps = 0;   // in a row, since the scale last changed
  int64_t skipped_steps = 0;  // over the whole run
};

class DynamicLossScaler {
 public:
  // The options must have passed check_loss_scaler_options.
  explicit DynamicLossScaler(const LossScalerOptions& options);

  double scale() const { return state_.scale; }
  const LossScalerState& state() const { return state_; }
  void restore(const LossScalerState& state) { state_ = state; }

  enum class Outcome { kApply, kApplyAndGrow, kSkip };
  // Records the reduced gradient of the step after `step` (finite or not). kSkip: the scale was
  // halved and the step must not be applied. An error when the halved scale falls below the
  // minimum: training cannot go on (the gradient overflows at any scale: a diverged run).
  absl::StatusOr<Outcome> record(bool gradient_finite, int64_t step);

 private:
  LossScalerOptions options_;
  LossScalerState state_;
};

// Names the option and its limit: the initial scale a power of two in [2^-24, 2^127], the
// interval >= 1, the minimum in (0, initial scale].
absl::Status check_loss_scaler_options(const LossScalerOptions& options);

}  // namespace xlate::trainer
