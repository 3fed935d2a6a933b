// What a search is asked for and what it returns, apart from any model: beam search with the
// GNMT length penalty (the paper's section 6.1; greedy search is beam 1 of the same rule). The
// search itself is engine/decoding/device_beam_search.h.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/ops/ops.h"

namespace xlate {

// A sentence's beam search stops when beam_size hypotheses have finished, or when n_best have
// and no live hypothesis can beat the n_best-th (its score can only fall: log P only decreases
// and, for α >= 0, dividing by lp(max_length) is the best it can hope for), or at its max
// length.
struct SearchOptions {
  int beam_size = 4;
  float length_penalty = 0.6f;  // α of lp(Y) = ((5 + |Y|) / 6)^α; 0 disables
  int n_best = 1;
  int min_length = 0;  // EOS is forbidden before this many tokens
  int start_token = 2;
  int end_token = 3;
  // DeviceBeamSearch reports the sentence's stable prefix as it grows (streaming; see
  // engine/decoding/stable_prefix.h).
  bool report_stable_prefix = false;
};

// Lexical constraints: the token sequences one sentence's translation must contain (a
// glossary's target terms), searched by the beam rule's constrained step
// (rules/beam_search.h).
using Constraints = std::vector<std::vector<int32_t>>;

struct Hypothesis {
  std::vector<int32_t> tokens;  // without the end token
  float score = 0.f;            // log P(Y|X) / lp(|Y|); |Y| counts the end token when present
  float log_prob = 0.f;         // log P(Y|X)
  // Filled after the search when alignments are asked for (engine/alignment.h), for the best
  // hypothesis of a sentence: [tokens.size(), source tokens + end token], row t the source
  // attention that chose tokens[t].
  std::vector<float> alignment;
};

// ((5 + length) / 6)^alpha: the one definition, beside the beam rule that ranks by it.
using rules::length_penalty;

}  // namespace xlate
