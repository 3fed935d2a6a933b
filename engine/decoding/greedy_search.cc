#include "engine/decoding/search.h"

namespace xlate {
namespace {

class GreedySearchRun : public SearchRun {
 public:
  GreedySearchRun(IncrementalDecoder& decoder, const std::vector<int>& max_lengths,
                  const SearchOptions& options)
      : decoder_(decoder), options_(options), max_lengths_(max_lengths),
        running_(max_lengths.size()), results_(max_lengths.size()) {
    for (size_t s = 0; s < max_lengths.size(); ++s) live_.push_back(static_cast<int32_t>(s));
    last_tokens_.assign(max_lengths.size(), options.start_token);
  }

  bool done() const override { return live_.empty(); }
  int live_sentences() const override { return static_cast<int>(live_.size()); }

  void step() override {
    std::vector<float> row_scores;
    for (int32_t s : live_) row_scores.push_back(running_[s].log_prob);
    // The best token, and the runner-up in case the best is a forbidden end token.
    const TopK top = decoder_.step(last_tokens_, row_scores, 2);
    const int64_t k = top.values.dim(1);
    const bool allow_end = step_ >= options_.min_length;
    std::vector<int32_t> kept_rows, kept_live, next_tokens;
    for (size_t row = 0; row < live_.size(); ++row) {
      int64_t pick = static_cast<int64_t>(row) * k;
      if (!allow_end && k > 1 && top.indices.data<int32_t>()[pick] == options_.end_token) ++pick;
      const int32_t best = top.indices.data<int32_t>()[pick];
      Hypothesis& hypothesis = running_[live_[row]];
      hypothesis.log_prob = top.values.data<float>()[pick];
      const bool ended = best == options_.end_token;
      if (!ended) hypothesis.tokens.push_back(best);
      if (ended || step_ + 1 >= max_lengths_[live_[row]]) {
        hypothesis.score = hypothesis.log_prob / length_penalty(step_ + 1, options_.length_penalty);
        results_[live_[row]].push_back(hypothesis);
      } else {
        kept_rows.push_back(static_cast<int32_t>(row));
        kept_live.push_back(live_[row]);
        next_tokens.push_back(best);
      }
    }
    if (kept_rows.size() != live_.size() && !kept_rows.empty()) decoder_.select_rows(kept_rows);
    live_ = std::move(kept_live);
    last_tokens_ = std::move(next_tokens);
    ++step_;
  }

  std::vector<std::vector<Hypothesis>> take_results() override { return std::move(results_); }

 private:
  IncrementalDecoder& decoder_;
  const SearchOptions options_;
  const std::vector<int> max_lengths_;
  std::vector<Hypothesis> running_;
  std::vector<std::vector<Hypothesis>> results_;
  std::vector<int32_t> live_;  // live row -> sentence
  std::vector<int32_t> last_tokens_;
  int step_ = 0;
};

class GreedySearch : public Search {
 public:
  std::unique_ptr<SearchRun> start(IncrementalDecoder& decoder,
                                   const std::vector<int>& max_lengths,
                                   const SearchOptions& options) const override {
    return std::make_unique<GreedySearchRun>(decoder, max_lengths, options);
  }
};

}  // namespace

std::unique_ptr<Search> make_greedy_search() { return std::make_unique<GreedySearch>(); }

}  // namespace xlate
