// The beam search step on the host: the rule of kernels/beam_search_step.h, one sentence after
// another, for beams of any width.
#include <vector>

#include "engine/ops/beam_step_views.h"
#include "engine/ops/cpu/cpu_ops.h"

namespace xlate::cpu {

void beam_search_step(BeamSearchTensors& state, const TopK& top, int end_token) {
  const BeamStepViews views = beam_step_views(state, top, end_token);
  std::vector<kernels::BeamCandidate> best(2 * static_cast<size_t>(views.shape.beam_stride));
  for (int n = 0; n < views.shape.sentences; ++n) {
    kernels::beam_search_step_sentence(n, views.rows, views.state, views.shape, best.data());
  }
}

}  // namespace xlate::cpu
