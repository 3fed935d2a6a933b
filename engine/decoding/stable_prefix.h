// The part of a sentence's translation that beam search can no longer change, for streaming: the
// longest prefix shared by every hypothesis that may still become the sentence's best — each
// live hypothesis whose score can still beat the best finished one, and that finished one.
// Every later best hypothesis descends from one of them, so the prefix only grows and is a
// prefix of the final best translation. With beam 1 (greedy) it is the whole live hypothesis.
//
// Hypotheses are read from the search's history (rules/beam_search.h): the token each
// live hypothesis b of a sentence took at step t, at [t, first_column + b] of a table of `width`
// columns, and the live index at step t - 1 it continued. Host memory.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace xlate {

struct HypothesisHistory {
  const int32_t* tokens;   // [L, width]
  const int32_t* parents;  // [L, width]
  int64_t width;
  int64_t first_column;    // the sentence's live index 0

  // The tokens of the hypothesis whose last token is live index `index` at step `last_step`,
  // first to last; empty for last_step -1.
  std::vector<int32_t> trace(int last_step, int index) const;
};

// A live hypothesis after `steps` steps: its live index and cumulative log P.
struct LiveHypothesis {
  int index;
  float log_prob;
};

// A finished hypothesis: its score log P / lp(|Y|) and where its last token is in the history.
struct FinishedHypothesis {
  float score;
  int last_step;  // -1: the empty hypothesis
  int last_index;
};

struct StablePrefixQuery {
  int steps = 0;                 // steps the sentence has taken (its live tokens are at steps - 1)
  std::vector<LiveHypothesis> live;
  std::optional<FinishedHypothesis> best_finished;
  float length_penalty = 0.6f;   // α >= 0 (the search's)
  int max_length = 1;            // the sentence's, end token included
};

// The stable prefix's tokens. A live hypothesis is left out when its best reachable score —
// log P / lp(max_length), since log P only falls and lp only grows — cannot beat the best
// finished one (the search ranks a tie after the hypothesis that finished first).
std::vector<int32_t> stable_prefix(const HypothesisHistory& history,
                                   const StablePrefixQuery& query);

}  // namespace xlate
