// The optimiser's ops on the CPU: the gradient's squared norm and Adam's update.
#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/ops/cpu/cpu_ops.h"

namespace xlate::cpu {

double sum_of_squares(const Tensor& x) {
  const float* g = x.data<float>();
  const int64_t count = x.numel();
  constexpr int64_t kBlock = 1 << 16;
  const int64_t blocks = (count + kBlock - 1) / kBlock;
  std::vector<double> partial(static_cast<size_t>(blocks), 0.0);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    double sum = 0;
    const int64_t end = std::min(count, (b + 1) * kBlock);
    for (int64_t i = b * kBlock; i < end; ++i) sum += static_cast<double>(g[i]) * g[i];
    partial[b] = sum;
  }
  double total = 0;
  for (double value : partial) total += value;
  return total;
}

void adam_update(Tensor& weights, Tensor& first_moment, Tensor& second_moment,
                 const Tensor& gradients, const AdamStep& step) {
  const int64_t count = weights.numel();
  float* w = weights.data<float>();
  float* m = first_moment.data<float>();
  float* v = second_moment.data<float>();
  const float* g = gradients.data<float>();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    const float gi = g[i] * step.gradient_scale;
    m[i] = step.beta1 * m[i] + (1.f - step.beta1) * gi;
    v[i] = step.beta2 * v[i] + (1.f - step.beta2) * gi * gi;
    w[i] -= step.step_size * m[i] /
            (std::sqrt(v[i]) * step.inverse_sqrt_correction2 + step.epsilon);
  }
}

}  // namespace xlate::cpu
