#include "trainer/optim/loss_scaler.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace xlate::trainer {

DynamicLossScaler::DynamicLossScaler(const LossScalerOptions& options) : options_(options) {
  state_.scale = options.initial_scale;
}

absl::StatusOr<DynamicLossScaler::Outcome> DynamicLossScaler::record(bool gradient_finite,
                                                                     int64_t step) {
  if (!gradient_finite) {
    const double halved = state_.scale / 2;
    if (halved < options_.minimum_scale) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the gradient of step ", step + 1, " is not finite even at loss scale ", state_.scale,
          "; halving it would go below --min_loss_scale ", options_.minimum_scale,
          " (the run has diverged: lower --lr_scale or set --clip_norm, and resume from the "
          "last checkpoint)"));
    }
    state_.scale = halved;
    state_.finite_steps = 0;
    ++state_.skipped_steps;
    return Outcome::kSkip;
  }
  if (++state_.finite_steps < options_.growth_interval) return Outcome::kApply;
  state_.finite_steps = 0;
  // The backward pass starts from the scale as a float: 2^127 is the largest power of two.
  if (state_.scale * 2 > std::ldexp(1.0, 127)) return Outcome::kApply;
  state_.scale *= 2;
  return Outcome::kApplyAndGrow;
}

absl::Status check_loss_scaler_options(const LossScalerOptions& options) {
  int exponent = 0;
  const double mantissa = std::frexp(options.initial_scale, &exponent);
  if (!(options.initial_scale >= std::ldexp(1.0, -24) &&
        options.initial_scale <= std::ldexp(1.0, 127)) || mantissa != 0.5) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--initial_loss_scale is ", options.initial_scale,
        "; it must be a power of two in [2^-24, 2^127] (so that scaling is exact)"));
  }
  if (options.growth_interval < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--loss_scale_window is ",
                                                   options.growth_interval, "; it must be >= 1"));
  }
  if (!(options.minimum_scale > 0 && options.minimum_scale <= options.initial_scale)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--min_loss_scale is ", options.minimum_scale, "; it must be in (0, ",
        options.initial_scale, "] (the initial loss scale)"));
  }
  return absl::OkStatus();
}

}  // namespace xlate::trainer
