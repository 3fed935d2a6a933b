// One step of beam search for one sentence, shared by the batch search (beam_search.cc) and the
// continuous decoder (sentences joining and leaving a running decode).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/decoding/search.h"

namespace xlate {

struct SentenceBeam {
  std::vector<Hypothesis> live;
  std::vector<Hypothesis> finished;
  int max_length = 0;
  bool done = false;
};

// Advances one sentence by one token given the log-probabilities [live, V] of its live
// hypotheses; fills `source_beams` with the live index each new live hypothesis continues.
// `length` is the number of tokens after this step. Sets sentence.done when it stops.
void advance(SentenceBeam& sentence, const float* log_probs, int64_t vocabulary, int length,
             const SearchOptions& options, std::vector<int32_t>& source_beams);

}  // namespace xlate
