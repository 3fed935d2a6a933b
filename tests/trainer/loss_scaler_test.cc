// Dynamic loss scaling's rule: a step whose gradient is not finite is skipped and halves the
// scale, `growth_interval` finite steps in a row double it, a scale halved below the minimum
// stops training naming the step, and the state restored from a checkpoint continues exactly.
#include "trainer/optim/loss_scaler.h"

#include <cmath>

#include <gtest/gtest.h>

namespace xlate::trainer {
namespace {

using Outcome = DynamicLossScaler::Outcome;

Outcome record(DynamicLossScaler& scaler, bool finite, int64_t step) {
  absl::StatusOr<Outcome> outcome = scaler.record(finite, step);
  EXPECT_TRUE(outcome.ok()) << outcome.status();
  return outcome.ok() ? *outcome : Outcome::kSkip;
}

TEST(DynamicLossScaler, AnOverflowSkipsThatStepAndHalvesTheScale) {
  DynamicLossScaler scaler({/*initial_scale=*/128, /*growth_interval=*/3, /*minimum_scale=*/1});
  EXPECT_EQ(scaler.scale(), 128);
  EXPECT_EQ(record(scaler, true, 0), Outcome::kApply);
  EXPECT_EQ(record(scaler, false, 1), Outcome::kSkip);
  EXPECT_EQ(scaler.scale(), 64);
  EXPECT_EQ(scaler.state().skipped_steps, 1);
  // The overflow restarted the count: three more finite steps before the scale doubles.
  EXPECT_EQ(record(scaler, true, 1), Outcome::kApply);
  EXPECT_EQ(record(scaler, true, 2), Outcome::kApply);
  EXPECT_EQ(record(scaler, true, 3), Outcome::kApplyAndGrow);
  EXPECT_EQ(scaler.scale(), 128);
  EXPECT_EQ(scaler.state().finite_steps, 0);
  EXPECT_EQ(scaler.state().skipped_steps, 1);
}

TEST(DynamicLossScaler, AScaleBelowTheMinimumStopsTrainingNamingTheStep) {
  DynamicLossScaler scaler({4, 2000, 1});
  EXPECT_EQ(record(scaler, false, 41), Outcome::kSkip);  // 2
  EXPECT_EQ(record(scaler, false, 41), Outcome::kSkip);  // 1
  absl::StatusOr<Outcome> outcome = scaler.record(false, 41);
  ASSERT_FALSE(outcome.ok());
  EXPECT_NE(outcome.status().message().find("step 42"), std::string::npos) << outcome.status();
  EXPECT_NE(outcome.status().message().find("--min_loss_scale 1"), std::string::npos)
      << outcome.status();
  EXPECT_EQ(scaler.scale(), 1);  // unchanged by the refused halving
}

TEST(DynamicLossScaler, GrowthStopsAtTheLargestFloatPowerOfTwo) {
  const double largest = std::ldexp(1.0, 127);
  DynamicLossScaler scaler({largest / 2, 1, 1});
  EXPECT_EQ(record(scaler, true, 0), Outcome::kApplyAndGrow);
  EXPECT_EQ(scaler.scale(), largest);
  EXPECT_EQ(record(scaler, true, 1), Outcome::kApply);
  EXPECT_EQ(scaler.scale(), largest);
  EXPECT_TRUE(std::isfinite(static_cast<float>(scaler.scale())));
}

TEST(DynamicLossScaler, ARestoredStateContinuesAsTheUnbrokenRun) {
  const LossScalerOptions options{256, 4, 1};
  const bool finite[] = {true, false, true, true, true, false, true, true, true, true, true};
  DynamicLossScaler unbroken(options), first(options);
  for (int i = 0; i < 5; ++i) first.record(finite[i], i).IgnoreError();
  DynamicLossScaler resumed(options);
  resumed.restore(first.state());
  for (int i = 0; i < 11; ++i) {
    const Outcome expected = record(unbroken, finite[i], i);
    if (i >= 5) {
      EXPECT_EQ(record(resumed, finite[i], i), expected) << "step " << i;
    }
  }
  EXPECT_EQ(resumed.state().scale, unbroken.state().scale);
  EXPECT_EQ(resumed.state().finite_steps, unbroken.state().finite_steps);
  EXPECT_EQ(resumed.state().skipped_steps, unbroken.state().skipped_steps);
}

TEST(DynamicLossScaler, OptionsNameTheirLimits) {
  EXPECT_TRUE(check_loss_scaler_options({128, 2000, 1e-4}).ok());
  const std::pair<LossScalerOptions, const char*> bad[] = {
      {{100, 2000, 1e-4}, "--initial_loss_scale is 100; it must be a power of two"},
      {{std::ldexp(1.0, 128), 2000, 1e-4}, "in [2^-24, 2^127]"},
      {{128, 0, 1e-4}, "--loss_scale_window is 0; it must be >= 1"},
      {{128, 2000, 0}, "--min_loss_scale is 0; it must be in (0, 128]"},
      {{128, 2000, 256}, "--min_loss_scale is 256"}};
  for (const auto& [options, expected] : bad) {
    const absl::Status status = check_loss_scaler_options(options);
    EXPECT_NE(status.message().find(expected), std::string::npos) << status;
  }
}

}  // namespace
}  // namespace xlate::trainer
