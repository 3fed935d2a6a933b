#include <algorithm>

#include "engine/decoding/search.h"

namespace xlate {
namespace {

class GreedySearch : public Search {
 public:
  std::vector<std::vector<Hypothesis>> search(IncrementalDecoder& decoder,
                                              const std::vector<int>& max_lengths,
                                              const SearchOptions& options) const override {
    const size_t sentences = max_lengths.size();
    std::vector<Hypothesis> running(sentences);
    std::vector<int32_t> live(sentences);  // live row -> sentence
    for (size_t s = 0; s < sentences; ++s) live[s] = static_cast<int32_t>(s);
    std::vector<int32_t> last_tokens(sentences, options.start_token);
    std::vector<std::vector<Hypothesis>> results(sentences);
    for (int step = 0; !live.empty(); ++step) {
      const Tensor log_probs = decoder.step(last_tokens);
      const int64_t vocabulary = log_probs.dim(1);
      std::vector<int32_t> kept_rows, kept_live, next_tokens;
      for (size_t row = 0; row < live.size(); ++row) {
        const float* scores = log_probs.data<float>() + static_cast<int64_t>(row) * vocabulary;
        int32_t best = -1;
        for (int32_t token = 0; token < vocabulary; ++token) {
          if (token == options.end_token && step < options.min_length) continue;
          if (best < 0 || scores[token] > scores[best]) best = token;
        }
        Hypothesis& hypothesis = running[live[row]];
        hypothesis.log_prob += scores[best];
        const bool ended = best == options.end_token;
        if (!ended) hypothesis.tokens.push_back(best);
        if (ended || step + 1 >= max_lengths[live[row]]) {
          hypothesis.score = hypothesis.log_prob / length_penalty(step + 1, options.length_penalty);
          results[live[row]].push_back(hypothesis);
        } else {
          kept_rows.push_back(static_cast<int32_t>(row));
          kept_live.push_back(live[row]);
          next_tokens.push_back(best);
        }
      }
      if (kept_rows.size() != live.size() && !kept_rows.empty()) decoder.select_rows(kept_rows);
      live = std::move(kept_live);
      last_tokens = std::move(next_tokens);
    }
    return results;
  }
};

}  // namespace

std::unique_ptr<Search> make_greedy_search() { return std::make_unique<GreedySearch>(); }

}  // namespace xlate
