#include <algorithm>
#include <cmath>
#include <queue>

#include "engine/decoding/search.h"

namespace xlate {
namespace {

struct Candidate {
  float log_prob;  // cumulative, after this token
  int32_t beam;    // index among the sentence's live hypotheses
  int32_t token;
  bool operator>(const Candidate& other) const { return log_prob > other.log_prob; }
};

struct SentenceBeam {
  std::vector<Hypothesis> live;
  std::vector<Hypothesis> finished;
  int max_length = 0;
  bool done = false;
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

// Advances one sentence by one token; fills `source_beams` with the live index each new live
// hypothesis continues. `length` is the number of tokens after this step.
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

class BeamSearchRun : public SearchRun {
 public:
  BeamSearchRun(IncrementalDecoder& decoder, const std::vector<int>& max_lengths,
                const SearchOptions& options)
      : decoder_(decoder), options_(options), beams_(max_lengths.size()) {
    for (size_t s = 0; s < beams_.size(); ++s) {
      beams_[s].live.push_back(Hypothesis{});
      beams_[s].max_length = max_lengths[s];
      active_.push_back(static_cast<int32_t>(s));
    }
    last_tokens_.assign(beams_.size(), options.start_token);
  }

  bool done() const override { return active_.empty(); }
  int live_sentences() const override { return static_cast<int>(active_.size()); }

  void step() override {
    ++length_;
    const Tensor log_probs = decoder_.step(last_tokens_);
    const int64_t vocabulary = log_probs.dim(1);
    std::vector<int64_t> first_row(active_.size());
    for (size_t i = 0, row = 0; i < active_.size(); row += beams_[active_[i]].live.size(), ++i) {
      first_row[i] = static_cast<int64_t>(row);
    }
    std::vector<std::vector<int32_t>> source_beams(active_.size());
#pragma omp parallel for schedule(dynamic) if (active_.size() > 1)
    for (size_t i = 0; i < active_.size(); ++i) {
      advance(beams_[active_[i]], log_probs.data<float>() + first_row[i] * vocabulary, vocabulary,
              length_, options_, source_beams[i]);
    }
    std::vector<int32_t> rows, next_active;
    last_tokens_.clear();
    for (size_t i = 0; i < active_.size(); ++i) {
      SentenceBeam& sentence = beams_[active_[i]];
      if (sentence.done) continue;
      next_active.push_back(active_[i]);
      for (size_t b = 0; b < sentence.live.size(); ++b) {
        rows.push_back(static_cast<int32_t>(first_row[i] + source_beams[i][b]));
        last_tokens_.push_back(sentence.live[b].tokens.back());
      }
    }
    active_ = std::move(next_active);
    if (!active_.empty()) decoder_.select_rows(rows);
  }

  std::vector<std::vector<Hypothesis>> take_results() override {
    std::vector<std::vector<Hypothesis>> results(beams_.size());
    for (size_t s = 0; s < beams_.size(); ++s) {
      std::vector<Hypothesis>& finished = beams_[s].finished;
      if (finished.size() > static_cast<size_t>(options_.n_best)) finished.resize(options_.n_best);
      results[s] = std::move(finished);
    }
    return results;
  }

 private:
  IncrementalDecoder& decoder_;
  const SearchOptions options_;
  std::vector<SentenceBeam> beams_;
  std::vector<int32_t> active_;  // sentences with live rows, in row order
  std::vector<int32_t> last_tokens_;
  int length_ = 0;  // tokens decoded so far
};

class BeamSearch : public Search {
 public:
  std::unique_ptr<SearchRun> start(IncrementalDecoder& decoder,
                                   const std::vector<int>& max_lengths,
                                   const SearchOptions& options) const override {
    return std::make_unique<BeamSearchRun>(decoder, max_lengths, options);
  }
};

}  // namespace

std::unique_ptr<Search> make_beam_search() { return std::make_unique<BeamSearch>(); }

}  // namespace xlate
