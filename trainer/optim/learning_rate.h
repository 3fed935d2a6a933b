// The paper's learning-rate schedule (section 5.3):
//   lrate = scale · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)
// rising linearly for `warmup` steps, then decaying with the inverse square root of the step.
// Steps count from 1.
#pragma once

#include <cstdint>

namespace xlate::trainer {

struct LearningRateSchedule {
  int d_model = 512;
  int64_t warmup_steps = 4000;
  double scale = 1.0;  // the paper's is 1

  double at(int64_t step) const;
};

}  // namespace xlate::trainer
