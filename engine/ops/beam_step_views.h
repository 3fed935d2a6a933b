// The raw views the beam step of rules/beam_search.h reads, taken from the op's tensors
// (shared by the CPU and CUDA backends of beam_search_step). CUDA-free.
#pragma once

#include "engine/ops/ops.h"
#include "rules/beam_search.h"

namespace xlate {

struct BeamStepViews {
  rules::BeamStepRows rows;
  rules::BeamStepState state;
  rules::BeamStepShape shape;
  rules::BeamConstraints constraints{};  // wanted_width 0 and null when unconstrained
};

inline BeamStepViews beam_step_views(BeamSearchTensors& t, const TopK& top, int end_token) {
  BeamStepViews v;
  v.rows = {top.values.data<float>(),       top.indices.data<int32_t>(),
            t.sentence_ids.data<int32_t>(), t.first_rows.data<int32_t>(),
            t.next_tokens.data<int32_t>(),  t.next_scores.data<float>(),
            t.source_rows.data<int32_t>()};
  v.state = {t.beams.data<int32_t>(),
             t.n_bests.data<int32_t>(),
             t.min_lengths.data<int32_t>(),
             t.max_lengths.data<int32_t>(),
             t.length_penalties.data<float>(),
             t.steps.data<int32_t>(),
             t.done.data<int32_t>(),
             t.finished_count.data<int32_t>(),
             t.finished_scores.data<float>(),
             t.finished_log_probs.data<float>(),
             t.finished_last_steps.data<int32_t>(),
             t.finished_last_index.data<int32_t>(),
             t.history_tokens.data<int32_t>(),
             t.history_parents.data<int32_t>()};
  const int64_t slots = t.beams.numel();
  v.shape.sentences = static_cast<int>(t.sentence_ids.numel());
  v.shape.candidates = static_cast<int>(top.indices.dim(1));
  if (t.constrained()) {
    v.rows.wanted_values = top.wanted_values.defined() ? top.wanted_values.data<float>() : nullptr;
    v.constraints = {t.constraint_counts.data<int32_t>(), t.constraint_starts.data<int32_t>(),
                     t.constraint_tokens.data<int32_t>(), t.row_met.data<int32_t>(),
                     t.row_progress.data<int32_t>(),      t.row_wanted.data<int32_t>(),
                     t.next_met.data<int32_t>(),          t.next_progress.data<int32_t>(),
                     t.next_wanted.data<int32_t>(),       static_cast<int>(t.wanted_width())};
  }
  v.shape.end_token = end_token;
  v.shape.beam_stride = static_cast<int>(t.history_tokens.dim(1) / slots);
  v.shape.finished_capacity = static_cast<int>(t.finished_scores.dim(1));
  v.shape.history_steps = static_cast<int>(t.history_tokens.dim(0));
  v.shape.sentence_slots = static_cast<int>(slots);
  return v;
}

}  // namespace xlate
