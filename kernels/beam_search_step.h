// One step of beam search with its state in device memory, so that a GPU decode loop needs no
// host round trip per token. The per-sentence rule and the length penalty are written once,
// here, and compiled for the host (the CPU op, engine/ops/cpu/beam_search_cpu.cc, which every
// host search runs: engine/decoding/) and the device (beam_search_step.cu). tests/search_test.cc
// holds the rule to hand-worked and exhaustive references.
//
// Layout: S sentence slots, each with its own search settings and state; N live sentences whose
// rows lie one after another: live sentence n is slot sentence_ids[n] and owns rows
// first_rows[n] .. first_rows[n] + beams[s] - 1. Sentences start and finish at different steps
// (continuous batching): each counts its own steps. A finished sentence idles its rows until
// the host drops them. CUDA-free.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/element_type.h"
#include "kernels/host_device.h"
#include "kernels/log_softmax_top_k.h"


namespace xlate::kernels {

// Largest beam of the device step: it ranks 2·B candidates in registers, and the top-k kernel
// that feeds it must give each row 2·B + 1 candidates (log_softmax_top_k.h).
constexpr int kMaxStepBeam = 15;
static_assert(2 * kMaxStepBeam + 1 <= kMaxTopK, "the top-k kernel must feed the widest beam");

// The GNMT length penalty lp(Y) = ((5 + |Y|) / 6)^α of the paper's section 6.1; α = 0 disables
// it. A hypothesis ranks by log P(Y|X) / lp(|Y|).
XLATE_HOST_DEVICE inline float length_penalty(int length, float alpha) {
  return alpha == 0.f ? 1.f : powf((5.f + static_cast<float>(length)) / 6.f, alpha);
}

struct BeamStepShape {
  int sentences = 0;            // N live sentences
  int candidates = 1;           // K candidates per row, best first
  int end_token = 3;
  int beam_stride = 1;          // B_max >= every beams[s]: columns per sentence in the history
  int finished_capacity = 3;    // F slots per sentence (3·B_max is enough: see add_finished)
  int history_steps = 1;        // L: rows of the history tables, steps a sentence may take
  int sentence_slots = 1;       // S

  XLATE_HOST_DEVICE int64_t history_width() const {
    return static_cast<int64_t>(sentence_slots) * beam_stride;
  }
};

// The settings and state of S sentence slots. Settings (set when a sentence starts): beams,
// n_bests, min_lengths (the end token is forbidden before this many tokens), max_lengths
// (tokens, the end token included), length_penalties (α of ((5 + |Y|) / 6)^α; 0 disables).
// State: steps (tokens decoded so far), done (0/1), finished_count and, for its F finished
// slots kept sorted by score (best first), finished_scores (log P / lp), finished_log_probs, and
// where the hypothesis's last token is in the history: finished_last_steps (-1 for an empty
// hypothesis) and finished_last_index (its live index at that step). History [L, S·B_max]: the
// token each live hypothesis b of sentence s took at its step t, at [t, s·B_max + b], and the
// live index it continued.
struct BeamStepState {
  const int32_t* beams;
  const int32_t* n_bests;
  const int32_t* min_lengths;
  const int32_t* max_lengths;
  const float* length_penalties;
  int32_t* steps;
  int32_t* done;
  int32_t* finished_count;
  float* finished_scores;
  float* finished_log_probs;
  int32_t* finished_last_steps;
  int32_t* finished_last_index;
  int32_t* history_tokens;
  int32_t* history_parents;
};

// Per-row inputs and outputs of a step. top_values/top_indices [R, K]: each row's best
// continuations, scored with the row's cumulative log P. Outputs [R]: the token each new row
// feeds next, its cumulative log P, and the row it continues (a row of the same sentence).
struct BeamStepRows {
  const float* top_values;
  const int32_t* top_indices;
  const int32_t* sentence_ids;  // [N]
  const int32_t* first_rows;    // [N]
  int32_t* next_tokens;
  float* next_scores;
  int32_t* source_rows;
};

// A continuation of live hypothesis `beam` of a sentence by `token`, at cumulative log P.
struct BeamCandidate {
  float log_prob;
  int32_t beam;
  int32_t token;
};

namespace beam_step_detail {

XLATE_HOST_DEVICE inline bool ranks_before(const BeamCandidate& a, const BeamCandidate& b) {
  if (a.log_prob != b.log_prob) return a.log_prob > b.log_prob;
  return a.beam != b.beam ? a.beam < b.beam : a.token < b.token;
}

// Inserts a finished hypothesis into sentence s's sorted slots (after equal scores).
XLATE_HOST_DEVICE inline void add_finished(const BeamStepState& state, const BeamStepShape& shape,
                                           int s, float score, float log_prob, int last_step,
                                           int last_index) {
  const int base = s * shape.finished_capacity;
  int at = state.finished_count[s];
  // Unreachable with F = 3·B: fewer than B before a sentence's last step, which adds at most B
  // ends and B live hypotheses.
  if (at >= shape.finished_capacity) return;
  while (at > 0 && state.finished_scores[base + at - 1] < score) {
    state.finished_scores[base + at] = state.finished_scores[base + at - 1];
    state.finished_log_probs[base + at] = state.finished_log_probs[base + at - 1];
    state.finished_last_steps[base + at] = state.finished_last_steps[base + at - 1];
    state.finished_last_index[base + at] = state.finished_last_index[base + at - 1];
    --at;
  }
  state.finished_scores[base + at] = score;
  state.finished_log_probs[base + at] = log_prob;
  state.finished_last_steps[base + at] = last_step;
  state.finished_last_index[base + at] = last_index;
  ++state.finished_count[s];
}

// Rows first_row + from .. first_row + beam - 1 idle: each continues itself with the end token,
// so the decoder keeps reading valid tokens and rows until the host drops them.
XLATE_HOST_DEVICE inline void idle_rows(int64_t first_row, int from, int beam,
                                        const BeamStepRows& rows, int end_token) {
  for (int b = from; b < beam; ++b) {
    const int64_t row = first_row + b;
    rows.next_tokens[row] = end_token;
    rows.next_scores[row] = -INFINITY;
    rows.source_rows[row] = static_cast<int32_t>(row);
  }
}

}  // namespace beam_step_detail

// The step of live sentence n; `best` holds 2·beams[s] candidates (a thread's local array of
// 2·kMaxStepBeam on the device, a buffer of 2·B_max on the host, where beams have no limit). A
// sentence that is done keeps its rows (idle) until the host next looks at `done` and drops
// them.
XLATE_HOST_DEVICE inline void beam_search_step_sentence(int n, const BeamStepRows& rows,
                                                        const BeamStepState& state,
                                                        const BeamStepShape& shape,
                                                        BeamCandidate* best) {
  const int s = rows.sentence_ids[n];
  const int beam = state.beams[s], k = shape.candidates, step = state.steps[s];
  const int64_t first_row = rows.first_rows[n];
  // A sentence past the history's end is done whatever its settings say (max_lengths <= L).
  if (state.done[s] || step >= shape.history_steps) {
    state.done[s] = 1;
    return beam_step_detail::idle_rows(first_row, 0, beam, rows, shape.end_token);
  }
  const int length = step + 1;
  const bool allow_end = step >= state.min_lengths[s];

  // The 2·B best continuations over the sentence's rows, best first.
  int held = 0;
  const int wanted = 2 * beam;
  for (int b = 0; b < beam; ++b) {
    const int64_t row = first_row + b;
    for (int j = 0; j < k; ++j) {
      const BeamCandidate c{rows.top_values[row * k + j], b, rows.top_indices[row * k + j]};
      if (!allow_end && c.token == shape.end_token) continue;
      if (held == wanted && !beam_step_detail::ranks_before(c, best[held - 1])) continue;
      int at = held < wanted ? held++ : held - 1;
      while (at > 0 && beam_step_detail::ranks_before(c, best[at - 1])) {
        best[at] = best[at - 1];
        --at;
      }
      best[at] = c;
    }
  }

  // An end among the B best finishes its parent (so that beam 1 is greedy search); the others
  // become the live hypotheses, in rank order.
  const float alpha = state.length_penalties[s];
  const float penalty = length_penalty(length, alpha);
  const int64_t history = static_cast<int64_t>(step) * shape.history_width() +
                          static_cast<int64_t>(s) * shape.beam_stride;
  int live = 0;
  float best_live = -INFINITY;
  for (int rank = 0; rank < held && live < beam; ++rank) {
    const BeamCandidate& c = best[rank];
    if (c.token == shape.end_token) {
      if (rank < beam) {
        beam_step_detail::add_finished(state, shape, s, c.log_prob / penalty, c.log_prob,
                                       step - 1, c.beam);
      }
      continue;
    }
    rows.next_tokens[first_row + live] = c.token;
    rows.next_scores[first_row + live] = c.log_prob;
    rows.source_rows[first_row + live] = static_cast<int32_t>(first_row + c.beam);
    state.history_tokens[history + live] = c.token;
    state.history_parents[history + live] = c.beam;
    best_live = best_live > c.log_prob ? best_live : c.log_prob;
    ++live;
  }
  beam_step_detail::idle_rows(first_row, live, beam, rows, shape.end_token);
  state.steps[s] = length;

  const int max_length = state.max_lengths[s];
  if (length >= max_length || live == 0) {
    for (int b = 0; b < live; ++b) {
      const float log_prob = rows.next_scores[first_row + b];
      beam_step_detail::add_finished(state, shape, s, log_prob / penalty, log_prob, step, b);
    }
    state.done[s] = 1;
    return;
  }
  const int finished = state.finished_count[s], n_best = state.n_bests[s];
  if (finished >= beam) {
    state.done[s] = 1;
  } else if (finished >= n_best) {
    // α >= 0: lp grows with length and log P only falls, so lp(max length) bounds the best
    // score a live hypothesis can still reach.
    const float bound = best_live / length_penalty(max_length, alpha);
    if (bound <= state.finished_scores[s * shape.finished_capacity + n_best - 1]) {
      state.done[s] = 1;
    }
  }
}

// The step of every live sentence, one device thread each.
void beam_search_step(const BeamStepRows& rows, const BeamStepState& state,
                      const BeamStepShape& shape, Stream stream);

}  // namespace xlate::kernels
