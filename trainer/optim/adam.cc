#include "trainer/optim/adam.h"

#include <cmath>
#include <stdexcept>

#include "engine/ops/training_ops.h"

namespace xlate::trainer {

Adam::Adam(const FlatParameters& parameters, AdamOptions options) : options_(options) {
  for (const ParameterSlice& slice : parameters.slices()) {
    if (slice.trainable) trainable_.push_back(slice);
  }
  m_ = Tensor::zeros({parameters.size()}, DType::kFloat32, parameters.device());
  v_ = Tensor::zeros({parameters.size()}, DType::kFloat32, parameters.device());
}

double Adam::gradient_norm(const FlatParameters& gradients, double gradient_scale) {
  return std::sqrt(sum_of_squares(gradients.flat())) * gradient_scale;
}

void Adam::update(FlatParameters& parameters, const FlatParameters& gradients, double lr,
                  double gradient_scale, double norm) {
  const double clip = options_.clip_norm > 0 && norm > options_.clip_norm
                          ? options_.clip_norm / norm : 1.0;
  ++steps_;
  const double correction1 = 1.0 - std::pow(options_.beta1, static_cast<double>(steps_));
  const double correction2 = 1.0 - std::pow(options_.beta2, static_cast<double>(steps_));
  AdamStep step;
  step.beta1 = static_cast<float>(options_.beta1);
  step.beta2 = static_cast<float>(options_.beta2);
  step.step_size = static_cast<float>(lr / correction1);
  step.inverse_sqrt_correction2 = static_cast<float>(1.0 / std::sqrt(correction2));
  step.epsilon = static_cast<float>(options_.epsilon);
  step.gradient_scale = static_cast<float>(gradient_scale * clip);
  for (const ParameterSlice& slice : trainable_) {
    Tensor weights = parameters.flat().view(slice.offset, {slice.count});
    Tensor m = m_.view(slice.offset, {slice.count});
    Tensor v = v_.view(slice.offset, {slice.count});
    adam_update(weights, m, v, gradients.flat().view(slice.offset, {slice.count}), step);
  }
}

void Adam::restore(const Tensor& m, const Tensor& v, int64_t steps) {
  if (m.numel() != m_.numel() || v.numel() != v_.numel()) {
    throw std::logic_error("Adam::restore: moment sizes differ from the model's");
  }
  m_.copy_from(m);
  v_.copy_from(v);
  steps_ = steps;
}

}  // namespace xlate::trainer
