#include <cmath>
#include <vector>

#include "engine/ops/cpu/cpu_ops.h"
#include "rules/repeat_guards.h"

namespace xlate::cpu {

// The rules of rules/repeat_guards.h, row by row: every penalty first, then the bans (as the
// device kernel orders them).
void penalize_repeats(Tensor& logits, const Tensor& tokens, const Tensor& history_rows,
                      const Tensor& lengths, const Tensor& penalties, const Tensor& ngram_sizes) {
  const int64_t rows = logits.dim(0), vocabulary = logits.dim(1), width = history_rows.dim(1);
  std::vector<int32_t> history;
  for (int64_t r = 0; r < rows; ++r) {
    const float penalty = penalties.data<float>()[r];
    const int n = ngram_sizes.data<int32_t>()[r];
    if (penalty == 1.f && n == 0) continue;
    const int length = lengths.data<int32_t>()[r];
    history.resize(static_cast<size_t>(length));
    for (int j = 0; j < length; ++j) {
      history[j] = tokens.data<int32_t>()[history_rows.data<int32_t>()[r * width + j]];
    }
    float* row = logits.data<float>() + r * vocabulary;
    if (penalty != 1.f) {
      for (int j = 0; j < length; ++j) {
        if (rules::first_occurrence(history.data(), j)) {
          row[history[j]] = rules::repetition_penalized(row[history[j]], penalty);
        }
      }
    }
    for (int start = 0; n > 0 && start <= length - n; ++start) {
      if (rules::completes_repeated_ngram(history.data(), length, start, n)) {
        row[history[start + n - 1]] = -INFINITY;
      }
    }
  }
}

}  // namespace xlate::cpu
