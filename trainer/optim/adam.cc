#include "trainer/optim/adam.h"

#include <cmath>
#include <stdexcept>

#include "engine/ops/training_ops.h"

namespace xlate::trainer {

Adam::Adam(const FlatParameters& parameters, AdamOptions options)
    : Adam(parameters, options, parameters.trainable_ranges()) {}

Adam::Adam(const FlatParameters& parameters, AdamOptions options, std::vector<FlatRange> owned)
    : options_(options), parameter_count_(parameters.size()), owned_(std::move(owned)) {
  int64_t packed = 0;
  for (const FlatRange& range : owned_) {
    if (range.offset < 0 || range.count < 0 || range.end() > parameter_count_) {
      throw std::logic_error("Adam: an owned range lies outside the parameters");
    }
    packed_offsets_.push_back(packed);
    if (!update_runs_.empty() && update_runs_.back().end() == range.offset) {
      update_runs_.back().count += range.count;  // packed right after the run's moments too
    } else {
      update_runs_.push_back(range);
      update_run_packed_offsets_.push_back(packed);
    }
    packed += range.count;
  }
  m_ = Tensor::zeros({packed}, DType::kFloat32, parameters.device());
  v_ = Tensor::zeros({packed}, DType::kFloat32, parameters.device());
}

double Adam::owned_sum_of_squares(const FlatParameters& gradients) const {
  double sum = 0;
  for (const FlatRange& range : owned_) {
    sum += sum_of_squares(gradients.flat().view(range.offset, {range.count}));
  }
  return sum;
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
  for (size_t k = 0; k < update_runs_.size(); ++k) {
    const FlatRange& run = update_runs_[k];
    Tensor weights = parameters.flat().view(run.offset, {run.count});
    Tensor m = m_.view(update_run_packed_offsets_[k], {run.count});
    Tensor v = v_.view(update_run_packed_offsets_[k], {run.count});
    adam_update(weights, m, v, gradients.flat().view(run.offset, {run.count}), step);
  }
}

AdamMoments Adam::moments(Device device) const {
  AdamMoments moments{Tensor::zeros({parameter_count_}, DType::kFloat32, device),
                      Tensor::zeros({parameter_count_}, DType::kFloat32, device), steps_};
  for (size_t k = 0; k < owned_.size(); ++k) {
    const FlatRange& range = owned_[k];
    moments.first.view(range.offset, {range.count})
        .copy_from(m_.view(packed_offsets_[k], {range.count}));
    moments.second.view(range.offset, {range.count})
        .copy_from(v_.view(packed_offsets_[k], {range.count}));
  }
  return moments;
}

void Adam::restore(const Tensor& m, const Tensor& v, int64_t steps) {
  if (m.numel() != parameter_count_ || v.numel() != parameter_count_) {
    throw std::logic_error("Adam::restore: moment sizes differ from the model's");
  }
  for (size_t k = 0; k < owned_.size(); ++k) {
    const FlatRange& range = owned_[k];
    m_.view(packed_offsets_[k], {range.count}).copy_from(m.view(range.offset, {range.count}));
    v_.view(packed_offsets_[k], {range.count}).copy_from(v.view(range.offset, {range.count}));
  }
  steps_ = steps;
}

}  // namespace xlate::trainer
