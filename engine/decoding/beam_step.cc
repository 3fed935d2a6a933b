#include "engine/decoding/beam_step.h"

#include <algorithm>
#include <cmath>

namespace xlate {
namespace {

struct Candidate {
  float log_prob;  // cumulative, after this token
  int32_t beam;    // index among the sentence's live hypotheses
  int32_t token;
};

bool better(const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; }

// The `count` best continuations of a sentence's live hypotheses, best first (ties: lower beam,
// then smaller token), from each hypothesis's best k. scores/tokens: [live, k].
std::vector<Candidate> best_candidates(size_t live, const float* scores, const int32_t* tokens,
                                       int64_t k, size_t count, bool allow_end,
                                       int32_t end_token) {
  std::vector<Candidate> candidates;
  candidates.reserve(live * static_cast<size_t>(k));
  for (size_t beam = 0; beam < live; ++beam) {
    for (int64_t j = 0; j < k; ++j) {
      const int64_t at = static_cast<int64_t>(beam) * k + j;
      if (!allow_end && tokens[at] == end_token) continue;
      candidates.push_back({scores[at], static_cast<int32_t>(beam), tokens[at]});
    }
  }
  count = std::min(count, candidates.size());
  std::partial_sort(candidates.begin(), candidates.begin() + static_cast<int64_t>(count),
                    candidates.end(), [](const Candidate& a, const Candidate& b) {
                      if (a.log_prob != b.log_prob) return a.log_prob > b.log_prob;
                      return a.beam != b.beam ? a.beam < b.beam : a.token < b.token;
                    });
  candidates.resize(count);
  return candidates;
}

}  // namespace

int candidates_per_row(const SearchOptions& options) { return 2 * options.beam_size + 1; }

void advance(SentenceBeam& sentence, const float* scores, const int32_t* tokens, int64_t k,
             int length, const SearchOptions& options, std::vector<int32_t>& source_beams) {
  const size_t beam_size = static_cast<size_t>(options.beam_size);
  const bool allow_end = length - 1 >= options.min_length;
  const std::vector<Candidate> candidates =
      best_candidates(sentence.live.size(), scores, tokens, k, 2 * beam_size, allow_end,
                      options.end_token);
  std::vector<Hypothesis> next;
  source_beams.clear();
  for (size_t rank = 0; rank < candidates.size() && next.size() < beam_size; ++rank) {
    const Candidate& candidate = candidates[rank];
    const Hypothesis& parent = sentence.live[candidate.beam];
    if (candidate.token == options.end_token) {
      // Only an end among the top beam_size candidates finishes a hypothesis (so that beam 1
      // is greedy search).
      if (rank < beam_size) {
        sentence.finished.push_back(
            {parent.tokens, candidate.log_prob / length_penalty(length, options.length_penalty),
             candidate.log_prob});
      }
      continue;
    }
    Hypothesis child{parent.tokens, 0.f, candidate.log_prob};
    child.tokens.push_back(candidate.token);
    next.push_back(std::move(child));
    source_beams.push_back(candidate.beam);
  }
  sentence.live = std::move(next);
  std::sort(sentence.finished.begin(), sentence.finished.end(), better);

  if (length >= sentence.max_length || sentence.live.empty()) {
    for (Hypothesis& hypothesis : sentence.live) {
      hypothesis.score = hypothesis.log_prob / length_penalty(length, options.length_penalty);
      sentence.finished.push_back(std::move(hypothesis));
    }
    sentence.live.clear();
    std::sort(sentence.finished.begin(), sentence.finished.end(), better);
    sentence.done = true;
    return;
  }
  if (sentence.finished.size() >= beam_size) {
    sentence.done = true;
    return;
  }
  const size_t n_best = static_cast<size_t>(options.n_best);
  if (sentence.finished.size() >= n_best) {
    // α >= 0 (checked by the caller): lp grows with length, and log P <= 0 only falls.
    const float best_possible_penalty = length_penalty(sentence.max_length, options.length_penalty);
    float best_live_bound = -INFINITY;
    for (const Hypothesis& hypothesis : sentence.live) {
      best_live_bound = std::max(best_live_bound, hypothesis.log_prob / best_possible_penalty);
    }
    if (best_live_bound <= sentence.finished[n_best - 1].score) sentence.done = true;
  }
}


}  // namespace xlate
