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

// Next-token candidates a search asks of the decoder per live hypothesis: the sentence's best
// 2·beam continuations (beam live ones, plus the ends among them) all lie within their rows'
// best 2·beam + 1, the 1 for an end token that may be forbidden (min_length).
int candidates_per_row(const SearchOptions& options);

// Advances one sentence by one token given the candidates of its live hypotheses: live
// hypothesis b continues with tokens[b·k + j] at cumulative log P scores[b·k + j], j < k, best
// first, k = min(candidates_per_row, V) (IncrementalDecoder::step). Fills `source_beams` with the
// live index each new live hypothesis continues. `length` is the number of tokens after this
// step. Sets sentence.done when it stops.
void advance(SentenceBeam& sentence, const float* scores, const int32_t* tokens, int64_t k,
             int length, const SearchOptions& options, std::vector<int32_t>& source_beams);

}  // namespace xlate
