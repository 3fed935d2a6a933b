#include "engine/decoding/stable_prefix.h"

#include <algorithm>

#include "engine/decoding/search.h"

namespace xlate {

std::vector<int32_t> HypothesisHistory::trace(int last_step, int index) const {
  std::vector<int32_t> hypothesis;
  for (int t = last_step; t >= 0; --t) {
    const int64_t cell = t * width + first_column + index;
    hypothesis.push_back(tokens[cell]);
    index = parents[cell];
  }
  std::reverse(hypothesis.begin(), hypothesis.end());
  return hypothesis;
}

std::vector<int32_t> stable_prefix(const HypothesisHistory& history,
                                   const StablePrefixQuery& query) {
  std::vector<std::vector<int32_t>> contenders;
  if (query.best_finished) {
    contenders.push_back(history.trace(query.best_finished->last_step,
                                       query.best_finished->last_index));
  }
  const float best_penalty = length_penalty(query.max_length, query.length_penalty);
  for (const LiveHypothesis& live : query.live) {
    if (query.best_finished && live.log_prob / best_penalty <= query.best_finished->score) {
      continue;
    }
    contenders.push_back(history.trace(query.steps - 1, live.index));
  }
  if (contenders.empty()) return {};
  std::vector<int32_t> prefix = std::move(contenders.front());
  for (size_t c = 1; c < contenders.size(); ++c) {
    const auto [end, unused] = std::mismatch(prefix.begin(), prefix.end(),
                                             contenders[c].begin(), contenders[c].end());
    prefix.erase(end, prefix.end());
  }
  return prefix;
}

}  // namespace xlate
