// Which encoded pairs `prepare` keeps (the rules are listed in prepare.h).
#pragma once

#include <cstdint>

namespace xlate::trainer {

struct PairLimits {
  int64_t max_length = 256;       // tokens per model sequence (pieces + eos / decoder start)
  double max_length_ratio = 3.0;  // longer / shorter side in pieces; 0 = no limit
};

enum class PairVerdict { kKeep, kEmpty, kTooLong, kRatio };

// The verdict for a pair of `source_pieces` and `target_pieces` SentencePiece pieces (no
// special ids); the first rule that applies wins: empty, too long, ratio.
PairVerdict judge_pair(int64_t source_pieces, int64_t target_pieces, const PairLimits& limits);

}  // namespace xlate::trainer
