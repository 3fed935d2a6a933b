#include "server/batching_policy.h"

#include <algorithm>
#include <cstdlib>

namespace xlate::server {

BatchDecision decide_batch(const std::deque<PendingSentence>& queue, absl::Time now,
                           const BatchingLimits& limits) {
  BatchDecision decision;
  std::vector<size_t> live;
  absl::Time next_deadline = absl::InfiniteFuture();
  for (size_t i = 0; i < queue.size(); ++i) {
    if (queue[i].deadline <= now) {
      decision.expired.push_back(i);
    } else {
      live.push_back(i);
      next_deadline = std::min(next_deadline, queue[i].deadline);
    }
  }
  if (live.empty()) return decision;

  // The batch grows from the first sentence in fair order (so no client starves, nor a
  // sentence) with the sentences closest to it in length (so that little padding and few
  // decoding steps are wasted), while the padded token budget and the sentence limit allow.
  // Their decoding options may differ: each sentence decodes with its own.
  size_t first = live.front();
  for (size_t i : live) {
    if (queue[i].fair_start < queue[first].fair_start) first = i;
  }
  const PendingSentence& anchor = queue[first];
  std::vector<size_t> candidates{first};
  for (size_t i : live) {
    if (i != first) candidates.push_back(i);
  }
  std::stable_sort(candidates.begin() + 1, candidates.end(), [&](size_t a, size_t b) {
    return std::abs(queue[a].tokens - anchor.tokens) < std::abs(queue[b].tokens - anchor.tokens);
  });
  int64_t longest = 0;
  bool full = false;
  for (size_t i : candidates) {
    const int64_t padded = std::max(longest, queue[i].tokens) *
                           static_cast<int64_t>(decision.batch.size() + 1);
    if (static_cast<int>(decision.batch.size()) >= limits.max_batch_sentences ||
        (!decision.batch.empty() && padded > limits.max_batch_tokens)) {
      full = true;
      break;
    }
    decision.batch.push_back(i);
    longest = std::max(longest, queue[i].tokens);
  }
  std::sort(decision.batch.begin(), decision.batch.end());
  const absl::Duration waited = now - anchor.enqueued;
  if (full || waited >= limits.max_queue_delay) return decision;
  if (static_cast<int>(decision.batch.size()) >= limits.max_batch_sentences ||
      longest * static_cast<int64_t>(decision.batch.size()) >= limits.max_batch_tokens) {
    return decision;  // exactly full: nothing more could join
  }
  decision.batch.clear();
  decision.wait = std::min(limits.max_queue_delay - waited, next_deadline - now);
  return decision;
}

}  // namespace xlate::server
