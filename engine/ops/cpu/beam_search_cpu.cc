// The beam search step on the host: the rule of rules/beam_search.h, one sentence after
// another, for beams of any width.
#include <vector>

#include "engine/ops/beam_step_views.h"
#include "engine/ops/cpu/cpu_ops.h"

namespace xlate::cpu {

void beam_search_step(BeamSearchTensors& state, const TopK& top, int end_token) {
  const BeamStepViews views = beam_step_views(state, top, end_token);
  std::vector<rules::BeamCandidate> best(2 * static_cast<size_t>(views.shape.beam_stride));
  std::vector<rules::ConstrainedCandidate> all;
  if (state.constrained()) {
    all.resize(static_cast<size_t>(views.shape.beam_stride) *
               (views.shape.candidates + views.constraints.wanted_width));
  }
  for (int n = 0; n < views.shape.sentences; ++n) {
    if (!state.constrained()) {
      rules::beam_search_step_sentence(n, views.rows, views.state, views.shape, best.data());
    } else if (views.constraints.counts[views.rows.sentence_ids[n]] > 0) {
      rules::constrained_step_sentence(n, views.rows, views.state, views.shape,
                                         views.constraints, all.data());
    } else {
      rules::beam_search_step_sentence(n, views.rows, views.state, views.shape, best.data());
      rules::clear_constraint_rows(n, views.rows, views.state, views.constraints);
    }
  }
}

}  // namespace xlate::cpu
