// The raw views the beam step of kernels/beam_search_step.h reads, taken from the op's tensors
// (shared by the CPU and CUDA backends of beam_search_step). CUDA-free.
#pragma once

#include "engine/ops/ops.h"
#include "kernels/beam_search_step.h"

namespace xlate {

struct BeamStepViews {
  kernels::BeamStepRows rows;
  kernels::BeamStepState state;
  kernels::BeamStepShape shape;
};

inline BeamStepViews beam_step_views(BeamSearchTensors& t, const TopK& top,
                                     const BeamStepParams& params) {
  BeamStepViews v;
  v.rows = {top.values.data<float>(),       top.indices.data<int32_t>(),
            t.sentence_ids.data<int32_t>(), t.next_tokens.data<int32_t>(),
            t.next_scores.data<float>(),    t.source_rows.data<int32_t>()};
  v.state = {t.max_lengths.data<int32_t>(),         t.done.data<int32_t>(),
             t.finished_count.data<int32_t>(),      t.finished_scores.data<float>(),
             t.finished_log_probs.data<float>(),    t.finished_last_steps.data<int32_t>(),
             t.finished_last_index.data<int32_t>(), t.history_tokens.data<int32_t>(),
             t.history_parents.data<int32_t>()};
  v.shape.sentences = static_cast<int>(t.sentence_ids.numel());
  v.shape.beam = params.beam;
  v.shape.candidates = static_cast<int>(top.indices.dim(1));
  v.shape.step = params.step;
  v.shape.n_best = params.n_best;
  v.shape.min_length = params.min_length;
  v.shape.end_token = params.end_token;
  v.shape.length_penalty = params.length_penalty;
  v.shape.finished_capacity = static_cast<int>(t.finished_scores.dim(1));
  v.shape.history_width = static_cast<int>(t.history_tokens.dim(1));
  return v;
}

}  // namespace xlate
