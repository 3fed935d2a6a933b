// Adam (Kingma & Ba) with the paper's β1 = 0.9, β2 = 0.98, ε = 1e-9 and bias correction, over
// the flat parameter buffer; fixed (non-trainable) slices are left untouched. Optional
// clipping of the gradient's global L2 norm before the update.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/tensor.h"
#include "trainer/distributed/flat_range.h"
#include "trainer/model/flat_parameters.h"

namespace xlate::trainer {

struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.98;
  double epsilon = 1e-9;
  double clip_norm = 0;  // 0 = no clipping
};

// Adam's moments laid out like the flat parameters, on the CPU (zeros where the optimizer has
// none: fixed tables, other ranks' shards), and its step count: what a checkpoint holds.
struct AdamMoments {
  Tensor first, second;  // float32 [P]
  int64_t steps = 0;
};

class Adam {
 public:
  // Over every trainable parameter.
  Adam(const FlatParameters& parameters, AdamOptions options);
  // Over the parameters in `owned` only (disjoint ranges of the flat buffer within trainable
  // parameters): ZeRO-1, where each rank keeps the moments of its own shards and updates only
  // those. The moments are stored packed, range after range.
  Adam(const FlatParameters& parameters, AdamOptions options, std::vector<FlatRange> owned);

  // The global L2 norm of `gradient_scale` · gradients: not finite when an element is inf or
  // NaN (the trainer skips or stops such a step before update()).
  static double gradient_norm(const FlatParameters& gradients, double gradient_scale);
  // The sum of squares of the gradients in the owned ranges (unscaled): the ranks' sums add up
  // to the squared norm of a gradient that is reduce-scattered over them.
  double owned_sum_of_squares(const FlatParameters& gradients) const;

  // One update with learning rate `lr` from the gradient `gradient_scale` · gradients (the
  // trainer's summed gradient times 1 / (target tokens · loss scale): the scaling is folded
  // into the update rather than a pass of its own), clipped by `norm`, which is
  // gradient_norm(gradients, gradient_scale); counts the step. Runs on the parameters' device
  // (the moments live there).
  void update(FlatParameters& parameters, const FlatParameters& gradients, double lr,
              double gradient_scale, double norm);

  int64_t steps() const { return steps_; }
  const std::vector<FlatRange>& owned() const { return owned_; }
  // adam_update calls per update(): the owned ranges joined where they meet.
  size_t update_runs() const { return update_runs_.size(); }
  Device device() const { return m_.device(); }  // where the moments live and update() runs
  // The moments for a checkpoint (zeros outside the owned ranges), full-size on `device` (ZeRO-1
  // gathers the other ranks' shards into them where its collectives run); restore() takes such
  // moments (from any device) back with the step count, keeping the owned ranges' part.
  AdamMoments moments(Device device = Device::kCPU) const;
  void restore(const Tensor& m, const Tensor& v, int64_t steps);

 private:
  AdamOptions options_;
  int64_t parameter_count_;
  std::vector<FlatRange> owned_;
  std::vector<int64_t> packed_offsets_;  // where each owned range's moments start in m_, v_
  // The owned ranges with neighbours in both the flat buffer and the packed moments joined:
  // update() runs one adam_update per run, not one per parameter tensor (a base model's 254
  // kernel launches a step on a GPU become a few).
  std::vector<FlatRange> update_runs_;
  std::vector<int64_t> update_run_packed_offsets_;
  Tensor m_, v_;                         // float32 [sum of owned counts], the parameters' device
  int64_t steps_ = 0;
};

}  // namespace xlate::trainer
