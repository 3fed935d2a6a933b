// The beam search step on the host: the rule of kernels/beam_search_step.h, one sentence after
// another.
#include "engine/ops/beam_step_views.h"
#include "engine/ops/cpu/cpu_ops.h"

namespace xlate::cpu {

void beam_search_step(BeamSearchTensors& state, const TopK& top, int end_token) {
  const BeamStepViews views = beam_step_views(state, top, end_token);
  for (int n = 0; n < views.shape.sentences; ++n) {
    kernels::beam_search_step_sentence(n, views.rows, views.state, views.shape);
  }
}

}  // namespace xlate::cpu
