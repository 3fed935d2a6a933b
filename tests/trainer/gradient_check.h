// Finite-difference gradient checking for the trainer's tests: central differences of a scalar
// loss at sampled entries of a float32 tensor, compared with the analytic gradient.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "engine/tensor.h"

namespace xlate::trainer::testing {

inline Tensor random_tensor(std::vector<int64_t> shape, std::mt19937& rng, float scale = 1.f) {
  Tensor t = Tensor::empty(std::move(shape), DType::kFloat32);
  std::uniform_real_distribution<float> uniform(-scale, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = uniform(rng);
  return t;
}

// Σ out ⊙ weights in double: a scalar whose gradient with respect to out is `weights`.
inline double weighted_sum(const Tensor& out, const Tensor& weights) {
  double sum = 0;
  for (int64_t i = 0; i < out.numel(); ++i) {
    sum += static_cast<double>(out.data<float>()[i]) * weights.data<float>()[i];
  }
  return sum;
}

struct GradientCheck {
  float step = 1e-2f;
  double absolute = 2e-3;  // float32 forward passes: rounding of the loss / (2 · step)
  double relative = 2e-2;
  int samples = 24;
};

// Perturbs up to `check.samples` entries of x (evenly spread) and compares
// (loss(x + h) - loss(x - h)) / 2h with analytic[i].
inline void expect_gradient_matches(const std::function<double()>& loss, Tensor& x,
                                    const Tensor& analytic, const std::string& what,
                                    GradientCheck check = {}) {
  const int64_t count = x.numel();
  const int64_t stride = std::max<int64_t>(1, count / check.samples);
  int failures = 0;
  for (int64_t i = 0; i < count && failures < 3; i += stride) {
    float& value = x.data<float>()[i];
    const float original = value;
    value = original + check.step;
    const double plus = loss();
    value = original - check.step;
    const double minus = loss();
    value = original;
    const double numeric = (plus - minus) / (2.0 * check.step);
    const double expected = analytic.data<float>()[i];
    const double tolerance =
        check.absolute + check.relative * std::max(std::fabs(numeric), std::fabs(expected));
    if (std::fabs(numeric - expected) > tolerance) {
      ++failures;
      ADD_FAILURE() << what << "[" << i << "]: analytic " << expected << " vs numeric " << numeric;
    }
  }
}

}  // namespace xlate::trainer::testing
