#include "engine/decoding/beam_step.h"

#include <algorithm>
#include <cmath>
#include <queue>

namespace xlate {
namespace {

struct Candidate {
  float log_prob;  // cumulative, after this token
  int32_t beam;    // index among the sentence's live hypotheses
  int32_t token;
  bool operator>(const Candidate& other) const { return log_prob > other.log_prob; }
};

bool better(const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; }

// The `count` best continuations of a sentence's live hypotheses, best first.
// log_probs: [live, V] rows of this sentence.
std::vector<Candidate> best_candidates(const SentenceBeam& sentence, const float* log_probs,
                                       int64_t vocabulary, size_t count, bool allow_end,
                                       int32_t end_token) {
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  for (size_t beam = 0; beam < sentence.live.size(); ++beam) {
    const float base = sentence.live[beam].log_prob;
    const float* row = log_probs + static_cast<int64_t>(beam) * vocabulary;
    for (int32_t token = 0; token < vocabulary; ++token) {
      if (!allow_end && token == end_token) continue;
      const float score = base + row[token];
      if (heap.size() < count) {
        heap.push({score, static_cast<int32_t>(beam), token});
      } else if (score > heap.top().log_prob) {
        heap.pop();
        heap.push({score, static_cast<int32_t>(beam), token});
      }
    }
  }
  std::vector<Candidate> best;
  for (; !heap.empty(); heap.pop()) best.push_back(heap.top());
  std::reverse(best.begin(), best.end());
  return best;
}

}  // namespace

void advance(SentenceBeam& sentence, const float* log_probs, int64_t vocabulary, int length,
             const SearchOptions& options, std::vector<int32_t>& source_beams) {
  const size_t beam_size = static_cast<size_t>(options.beam_size);
  const bool allow_end = length - 1 >= options.min_length;
  const std::vector<Candidate> candidates = best_candidates(
      sentence, log_probs, vocabulary, 2 * beam_size, allow_end, options.end_token);
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
