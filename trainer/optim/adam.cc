#include "trainer/optim/adam.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace xlate::trainer {
namespace {

// Σ g² in double, in fixed blocks summed in order (thread-count independent).
double squared_norm(const float* g, int64_t count) {
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

}  // namespace

Adam::Adam(const FlatParameters& parameters, AdamOptions options) : options_(options) {
  for (const ParameterSlice& slice : parameters.slices()) {
    if (slice.trainable) trainable_.push_back(slice);
  }
  m_ = Tensor::zeros({parameters.size()}, DType::kFloat32);
  v_ = Tensor::zeros({parameters.size()}, DType::kFloat32);
}

double Adam::update(FlatParameters& parameters, const FlatParameters& gradients, double lr) {
  const float* g = gradients.flat().data<float>();
  const double norm = std::sqrt(squared_norm(g, gradients.size()));
  const double clip = options_.clip_norm > 0 && norm > options_.clip_norm
                          ? options_.clip_norm / norm : 1.0;
  ++steps_;
  const double correction1 = 1.0 - std::pow(options_.beta1, static_cast<double>(steps_));
  const double correction2 = 1.0 - std::pow(options_.beta2, static_cast<double>(steps_));
  const float beta1 = static_cast<float>(options_.beta1);
  const float beta2 = static_cast<float>(options_.beta2);
  const float step_size = static_cast<float>(lr / correction1);
  const float inverse_sqrt_correction2 = static_cast<float>(1.0 / std::sqrt(correction2));
  const float epsilon = static_cast<float>(options_.epsilon);
  const float gradient_scale = static_cast<float>(clip);
  float* w = parameters.flat().data<float>();
  float* m = m_.data<float>();
  float* v = v_.data<float>();
  for (const ParameterSlice& slice : trainable_) {
    const int64_t end = slice.offset + slice.count;
#pragma omp parallel for schedule(static)
    for (int64_t i = slice.offset; i < end; ++i) {
      const float gi = g[i] * gradient_scale;
      m[i] = beta1 * m[i] + (1.f - beta1) * gi;
      v[i] = beta2 * v[i] + (1.f - beta2) * gi * gi;
      w[i] -= step_size * m[i] / (std::sqrt(v[i]) * inverse_sqrt_correction2 + epsilon);
    }
  }
  return norm;
}

void Adam::restore(const Tensor& m, const Tensor& v, int64_t steps) {
  if (m.numel() != m_.numel() || v.numel() != v_.numel()) {
    throw std::logic_error("Adam::restore: moment sizes differ from the model's");
  }
  std::memcpy(m_.raw_data(), m.raw_data(), m_.nbytes());
  std::memcpy(v_.raw_data(), v.raw_data(), v_.nbytes());
  steps_ = steps;
}

}  // namespace xlate::trainer
