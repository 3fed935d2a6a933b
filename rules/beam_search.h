// The beam search's rule, one step of one sentence, with its state in arrays (device memory on
// a GPU), so that a GPU decode loop needs no host round trip per token: the per-sentence step,
// the lexically constrained step and the length penalty, written once, here, and compiled for
// the host (the CPU op, engine/ops/cpu/beam_search_cpu.cc) and the device
// (kernels/beam_search_step.cu, which launches it). tests/search_test.cc holds the rule to
// hand-worked and exhaustive references.
//
// Layout: S sentence slots, each with its own search settings and state; N live sentences whose
// rows lie one after another: live sentence n is slot sentence_ids[n] and owns rows
// first_rows[n] .. first_rows[n] + beams[s] - 1. Sentences start and finish at different steps
// (continuous batching): each counts its own steps. A finished sentence idles its rows until
// the host drops them. CUDA-free.
#pragma once

#include <cmath>
#include <cstdint>

#include "rules/host_device.h"

namespace xlate::rules {

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
  // Constrained: [R, W] the scores of the rows' wanted tokens (BeamConstraints::wanted), on the
  // scale of top_values; null otherwise.
  const float* wanted_values = nullptr;
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

// Sentence s is done once beams[s] hypotheses have finished, or n_bests[s] have and no live
// one (the best at log P best_live) can beat the n-th: α >= 0, so lp grows with length and log P
// only falls, and lp(max length) bounds the best score a live hypothesis can still reach.
XLATE_HOST_DEVICE inline void stop_when_decided(const BeamStepState& state,
                                                const BeamStepShape& shape, int s,
                                                float best_live, int max_length, float alpha) {
  const int finished = state.finished_count[s], n_best = state.n_bests[s];
  if (finished >= state.beams[s]) {
    state.done[s] = 1;
  } else if (finished >= n_best) {
    const float bound = best_live / length_penalty(max_length, alpha);
    if (bound <= state.finished_scores[s * shape.finished_capacity + n_best - 1]) {
      state.done[s] = 1;
    }
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
  beam_step_detail::stop_when_decided(state, shape, s, best_live, max_length, alpha);
}

// Lexical constraints: token sequences every finished hypothesis of a sentence must contain
// (a glossary's target terms), searched by dynamic beam allocation (Post & Vilar 2018): each
// row tracks which constraints its hypothesis has produced and how far it is into the one it
// is producing; every step its candidates are its K best tokens plus the W "wanted" tokens that
// would advance a constraint (scored by the decoder like the others), and the beam is shared
// out between banks of hypotheses by how many constraint tokens they have met, so that
// hypotheses that took a constraint are not pushed out by likelier ones that did not. An end
// is allowed only once every constraint is met.
constexpr int kMaxConstraints = 16;       // per sentence: one bit each in a row's met mask
constexpr int kMaxConstraintTokens = 64;  // per sentence, all its constraints together

// Settings by slot, and per-row state. Constraint j of slot s is
// tokens[s·T + starts[s·(C + 1) + j] .. s·T + starts[s·(C + 1) + j + 1]) with C =
// kMaxConstraints, T = kMaxConstraintTokens, for j < counts[s] (0: the slot is unconstrained
// and searched by beam_search_step_sentence). A row's progress is -1 (no constraint under way)
// or j·T + the tokens of constraint j it has produced so far (at least 1, fewer than its
// length). The step reads the state of the rows it continues (met, progress [R], and wanted
// [R, W]: the tokens whose scores BeamStepRows::wanted_values holds, -1 where none) and writes
// those of the rows it makes (next_met, next_progress, next_wanted), which the next step's
// candidates include.
struct BeamConstraints {
  const int32_t* counts;  // [S]
  const int32_t* starts;  // [S, C + 1]
  const int32_t* tokens;  // [S, T]
  const int32_t* met;
  const int32_t* progress;
  const int32_t* wanted;
  int32_t* next_met;
  int32_t* next_progress;
  int32_t* next_wanted;
  int wanted_width = 0;
};

// A candidate of a constrained step: the hypothesis it makes and that hypothesis's state.
struct ConstrainedCandidate {
  float log_prob;
  int32_t beam;
  int32_t token;
  int32_t met;
  int32_t progress;
  int32_t bank;  // constraint tokens met: the met constraints' lengths + progress
  int32_t chosen;
};

namespace constraint_detail {

XLATE_HOST_DEVICE inline const int32_t* constraint(const BeamConstraints& c, int s, int j,
                                                   int* length) {
  const int32_t* starts = c.starts + static_cast<int64_t>(s) * (kMaxConstraints + 1);
  *length = starts[j + 1] - starts[j];
  return c.tokens + static_cast<int64_t>(s) * kMaxConstraintTokens + starts[j];
}

// The state after a hypothesis in (met, progress) takes `token`. Under way with constraint j,
// a token that does not continue it falls back to the longest prefix of j that still ends
// the output (as KMP's failure function: a constraint that overlaps itself is not missed);
// with none under way, a token that begins an unmet constraint starts it (the first such).
XLATE_HOST_DEVICE inline void advance(const BeamConstraints& c, int s, int32_t* met,
                                      int32_t* progress, int32_t token) {
  if (*progress >= 0) {
    const int j = *progress / kMaxConstraintTokens, matched = *progress % kMaxConstraintTokens;
    int length;
    const int32_t* t = constraint(c, s, j, &length);
    if (t[matched] == token) {
      if (matched + 1 == length) {
        *met |= 1 << j;
        *progress = -1;
      } else {
        *progress = j * kMaxConstraintTokens + matched + 1;
      }
      return;
    }
    // The longest l <= matched with t[0, l) == the last l tokens of t[0, matched) + token.
    for (int l = matched; l >= 1; --l) {
      bool same = t[l - 1] == token;
      for (int i = 0; same && i < l - 1; ++i) same = t[i] == t[matched - l + 1 + i];
      if (same) {
        *progress = j * kMaxConstraintTokens + l;
        return;
      }
    }
    *progress = -1;
  }
  for (int j = 0; j < c.counts[s]; ++j) {
    if ((*met >> j) & 1) continue;
    int length;
    const int32_t* t = constraint(c, s, j, &length);
    if (t[0] != token) continue;
    if (length == 1) {
      *met |= 1 << j;
    } else {
      *progress = j * kMaxConstraintTokens + 1;
    }
    return;
  }
}

// Constraint tokens a hypothesis in (met, progress) has produced: its bank.
XLATE_HOST_DEVICE inline int tokens_met(const BeamConstraints& c, int s, int32_t met,
                                        int32_t progress) {
  int total = progress >= 0 ? progress % kMaxConstraintTokens : 0;
  for (int j = 0; j < c.counts[s]; ++j) {
    int length;
    constraint(c, s, j, &length);
    if ((met >> j) & 1) total += length;
  }
  return total;
}

// Row `row`'s state and the tokens its next step must score: the next token of the constraint
// under way, or the first token of every unmet one.
XLATE_HOST_DEVICE inline void set_row(const BeamConstraints& c, int s, int64_t row, int32_t met,
                                      int32_t progress) {
  c.next_met[row] = met;
  c.next_progress[row] = progress;
  int32_t* wanted = c.next_wanted + row * c.wanted_width;
  int w = 0;
  if (s >= 0 && progress >= 0) {
    int length;
    const int32_t* t = constraint(c, s, progress / kMaxConstraintTokens, &length);
    wanted[w++] = t[progress % kMaxConstraintTokens];
  } else if (s >= 0) {
    for (int j = 0; j < c.counts[s] && w < c.wanted_width; ++j) {
      int length;
      const int32_t* t = constraint(c, s, j, &length);
      if (!((met >> j) & 1)) wanted[w++] = t[0];
    }
  }
  for (; w < c.wanted_width; ++w) wanted[w] = -1;
}

XLATE_HOST_DEVICE inline bool ranks_before(const ConstrainedCandidate& a,
                                           const ConstrainedCandidate& b) {
  if (a.log_prob != b.log_prob) return a.log_prob > b.log_prob;
  return a.beam != b.beam ? a.beam < b.beam : a.token < b.token;
}

}  // namespace constraint_detail

// Rows of live sentence n (unconstrained, or idle) with no constraint state: what a
// constrained batch's other sentences write beside their beam_search_step_sentence.
XLATE_HOST_DEVICE inline void clear_constraint_rows(int n, const BeamStepRows& rows,
                                                    const BeamStepState& state,
                                                    const BeamConstraints& constraints) {
  const int beam = state.beams[rows.sentence_ids[n]];
  for (int b = 0; b < beam; ++b) {
    constraint_detail::set_row(constraints, -1, rows.first_rows[n] + b, 0, -1);
  }
}

// The step of live sentence n whose slot has constraints: beam_search_step_sentence's rule
// with the candidates, the end and the selection of the constraints. `all` holds
// beams[s]·(K + W) candidates. Candidates: each row's K best tokens and its wanted tokens
// (those not among the K), at -inf none. An end (after min_lengths) only from a hypothesis
// that met every constraint; it finishes when it ranks among the B best of the top bank. The
// B live hypotheses are taken from the banks in turn, the most constraint tokens first, each
// bank's best first, a bank without candidates left giving its turn to the others. At the max
// length the live hypotheses that met every constraint finish; when none did and nothing has
// finished, all of them do (the caller sees which constraints are missing).
XLATE_HOST_DEVICE inline void constrained_step_sentence(int n, const BeamStepRows& rows,
                                                        const BeamStepState& state,
                                                        const BeamStepShape& shape,
                                                        const BeamConstraints& constraints,
                                                        ConstrainedCandidate* all) {
  using constraint_detail::ranks_before;
  const int s = rows.sentence_ids[n];
  const int beam = state.beams[s], k = shape.candidates, step = state.steps[s];
  const int64_t first_row = rows.first_rows[n];
  if (state.done[s] || step >= shape.history_steps) {
    state.done[s] = 1;
    beam_step_detail::idle_rows(first_row, 0, beam, rows, shape.end_token);
    return clear_constraint_rows(n, rows, state, constraints);
  }
  const int length = step + 1;
  const bool allow_end = step >= state.min_lengths[s];
  const int32_t every = (1 << constraints.counts[s]) - 1;
  const int top_bank = constraint_detail::tokens_met(constraints, s, every, -1);

  int held = 0;
  for (int b = 0; b < beam; ++b) {
    const int64_t row = first_row + b;
    const int32_t met = constraints.met[row], progress = constraints.progress[row];
    const int64_t top = row * k, wanted = row * constraints.wanted_width;
    for (int j = 0; j < k + constraints.wanted_width; ++j) {
      const bool among_top = j < k;
      const int32_t token = among_top ? rows.top_indices[top + j]
                                      : constraints.wanted[wanted + j - k];
      const float log_prob = among_top ? rows.top_values[top + j]
                                       : rows.wanted_values[wanted + j - k];
      if (token < 0 || log_prob == -INFINITY) continue;
      bool repeated = false;  // a wanted token among the row's K best, or wanted twice
      for (int i = 0; !among_top && !repeated && i < k; ++i) {
        repeated = rows.top_indices[top + i] == token;
      }
      for (int i = 0; !among_top && !repeated && i < j - k; ++i) {
        repeated = constraints.wanted[wanted + i] == token;
      }
      if (repeated) continue;
      ConstrainedCandidate c{log_prob, b, token, met, progress, 0, 0};
      if (token == shape.end_token) {
        if (!allow_end || met != every || progress >= 0) continue;
        c.bank = top_bank;
      } else {
        constraint_detail::advance(constraints, s, &c.met, &c.progress, token);
        c.bank = constraint_detail::tokens_met(constraints, s, c.met, c.progress);
      }
      int at_rank = held++;
      while (at_rank > 0 && ranks_before(c, all[at_rank - 1])) {
        all[at_rank] = all[at_rank - 1];
        --at_rank;
      }
      all[at_rank] = c;
    }
  }

  const float alpha = state.length_penalties[s];
  const float penalty = length_penalty(length, alpha);
  int top_rank = 0;  // candidates of the top bank seen so far, in rank order
  for (int i = 0; i < held; ++i) {
    if (all[i].bank != top_bank) continue;
    if (all[i].token == shape.end_token && top_rank < beam) {
      beam_step_detail::add_finished(state, shape, s, all[i].log_prob / penalty,
                                     all[i].log_prob, step - 1, all[i].beam);
    }
    ++top_rank;
  }
  // Banks take turns, the fullest first; cursor[b]: where bank b's next candidate is sought.
  int cursor[kMaxConstraintTokens + 1];
  for (int b = 0; b <= top_bank; ++b) cursor[b] = 0;
  int live = 0;
  for (bool took = true; took && live < beam;) {
    took = false;
    for (int bank = top_bank; bank >= 0 && live < beam; --bank) {
      int i = cursor[bank];
      while (i < held && (all[i].bank != bank || all[i].token == shape.end_token)) ++i;
      cursor[bank] = i + 1;
      if (i < held) {
        all[i].chosen = 1;
        ++live;
        took = true;
      }
    }
  }
  const int64_t history = static_cast<int64_t>(step) * shape.history_width() +
                          static_cast<int64_t>(s) * shape.beam_stride;
  live = 0;
  float best_live = -INFINITY;
  for (int i = 0; i < held; ++i) {
    if (!all[i].chosen) continue;
    const ConstrainedCandidate& c = all[i];
    const int64_t row = first_row + live;
    rows.next_tokens[row] = c.token;
    rows.next_scores[row] = c.log_prob;
    rows.source_rows[row] = static_cast<int32_t>(first_row + c.beam);
    state.history_tokens[history + live] = c.token;
    state.history_parents[history + live] = c.beam;
    constraint_detail::set_row(constraints, s, row, c.met, c.progress);
    best_live = best_live > c.log_prob ? best_live : c.log_prob;
    ++live;
  }
  beam_step_detail::idle_rows(first_row, live, beam, rows, shape.end_token);
  for (int b = live; b < beam; ++b) constraint_detail::set_row(constraints, -1, first_row + b, 0, -1);
  state.steps[s] = length;

  const int max_length = state.max_lengths[s];
  if (length >= max_length || live == 0) {
    for (int pass = 0; pass < 2; ++pass) {
      // Pass 0: the hypotheses that met every constraint; pass 1, when nothing finished: all.
      if (pass == 1 && state.finished_count[s] > 0) break;
      for (int b = 0; b < live; ++b) {
        const int64_t row = first_row + b;
        const bool complete = constraints.next_met[row] == every && constraints.next_progress[row] < 0;
        if (complete != (pass == 0)) continue;
        const float log_prob = rows.next_scores[row];
        beam_step_detail::add_finished(state, shape, s, log_prob / penalty, log_prob, step, b);
      }
    }
    state.done[s] = 1;
    return;
  }
  beam_step_detail::stop_when_decided(state, shape, s, best_live, max_length, alpha);
}

}  // namespace xlate::rules
