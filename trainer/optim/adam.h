// Adam (Kingma & Ba) with the paper's β1 = 0.9, β2 = 0.98, ε = 1e-9 and bias correction, over
// the flat parameter buffer; fixed (non-trainable) slices are left untouched. Optional
// clipping of the gradient's global L2 norm before the update.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/tensor.h"
#include "trainer/model/flat_parameters.h"

namespace xlate::trainer {

struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.98;
  double epsilon = 1e-9;
  double clip_norm = 0;  // 0 = no clipping
};

class Adam {
 public:
  Adam(const FlatParameters& parameters, AdamOptions options);

  // The global L2 norm of `gradient_scale` · gradients: not finite when an element is inf or
  // NaN (the trainer skips or stops such a step before update()).
  static double gradient_norm(const FlatParameters& gradients, double gradient_scale);

  // One update with learning rate `lr` from the gradient `gradient_scale` · gradients (the
  // trainer's summed gradient times 1 / (target tokens · loss scale): the scaling is folded
  // into the update rather than a pass of its own), clipped by `norm`, which is
  // gradient_norm(gradients, gradient_scale); counts the step. Runs on the parameters' device
  // (the moments live there).
  void update(FlatParameters& parameters, const FlatParameters& gradients, double lr,
              double gradient_scale, double norm);

  int64_t steps() const { return steps_; }
  // The moment estimates [P] on the parameters' device, for checkpoints; restore() puts them
  // back (from any device) with the step count.
  const Tensor& first_moment() const { return m_; }
  const Tensor& second_moment() const { return v_; }
  void restore(const Tensor& m, const Tensor& v, int64_t steps);

 private:
  AdamOptions options_;
  std::vector<ParameterSlice> trainable_;
  Tensor m_, v_;
  int64_t steps_ = 0;
};

}  // namespace xlate::trainer
