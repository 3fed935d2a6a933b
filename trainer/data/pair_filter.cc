#include "trainer/data/pair_filter.h"

#include <algorithm>

namespace xlate::trainer {

PairVerdict judge_pair(int64_t source_pieces, int64_t target_pieces, const PairLimits& limits) {
  if (source_pieces == 0 || target_pieces == 0) return PairVerdict::kEmpty;
  // Each side gains one token in the model: the source its eos, the decoder its start token.
  if (source_pieces + 1 > limits.max_length || target_pieces + 1 > limits.max_length) {
    return PairVerdict::kTooLong;
  }
  if (limits.max_length_ratio > 0) {
    const double longer = static_cast<double>(std::max(source_pieces, target_pieces));
    const double shorter = static_cast<double>(std::min(source_pieces, target_pieces));
    if (longer > limits.max_length_ratio * shorter) return PairVerdict::kRatio;
  }
  return PairVerdict::kKeep;
}

}  // namespace xlate::trainer
