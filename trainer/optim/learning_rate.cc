#include "trainer/optim/learning_rate.h"

#include <algorithm>
#include <cmath>

namespace xlate::trainer {

double LearningRateSchedule::at(int64_t step) const {
  const double s = static_cast<double>(std::max<int64_t>(step, 1));
  const double warmup = static_cast<double>(std::max<int64_t>(warmup_steps, 1));
  return scale / std::sqrt(static_cast<double>(d_model)) *
         std::min(1.0 / std::sqrt(s), s * std::pow(warmup, -1.5));
}

}  // namespace xlate::trainer
