// Decoding guards against repetition, applied to a step's logits before the softmax, as
// CTranslate2 does in every search and transformers does in greedy search (ctranslate2's and
// transformers' `repetition_penalty` and `no_repeat_ngram_size`). The rules are written once,
// here, for the CPU body (engine/ops/cpu/repeat_guards_cpu.cc) and the device kernel
// (kernels/repeat_guards.cu); engine/ops/ops.h (penalize_repeats) has the op. A row's history
// is the tokens it was fed so far, its start token first (transformers' decoder input ids).
// CUDA-free.
#pragma once

#include <cstdint>

#include "rules/host_device.h"

namespace xlate::rules {

// CTRL's repetition penalty (Keskar et al. 2019): the logit of a token already in the history,
// made less likely for penalty > 1 whatever its sign. Applied once per distinct token.
XLATE_HOST_DEVICE inline float repetition_penalized(float logit, float penalty) {
  return logit < 0.f ? logit * penalty : logit / penalty;
}

// Whether history position j holds the first occurrence of its token (so that a token seen
// several times is penalised once).
XLATE_HOST_DEVICE inline bool first_occurrence(const int32_t* history, int j) {
  for (int i = 0; i < j; ++i) {
    if (history[i] == history[j]) return false;
  }
  return true;
}

// Whether the n-gram history[start .. start + n) would be repeated by its last token next:
// its first n - 1 tokens equal the last n - 1 of the history (length tokens), so the next token
// may not be history[start + n - 1]. 0 <= start <= length - n; n >= 1 (n = 1 bans every token
// of the history).
XLATE_HOST_DEVICE inline bool completes_repeated_ngram(const int32_t* history, int length,
                                                       int start, int n) {
  const int tail = length - (n - 1);
  for (int i = 0; i < n - 1; ++i) {
    if (history[start + i] != history[tail + i]) return false;
  }
  return true;
}

}  // namespace xlate::rules
