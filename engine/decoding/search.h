// Search over an incremental decoder, apart from any model: beam search with the GNMT length
// penalty (the paper's section 6.1) and greedy search implement one interface.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/ops/ops.h"

namespace xlate {

// What a search needs of a model. Rows are laid out sentence by sentence; a search starts with
// one row per sentence.
class IncrementalDecoder {
 public:
  virtual ~IncrementalDecoder() = default;
  // Feeds one token per live row and returns, per row r, the k' = min(k, V) most probable next
  // tokens, best first (ties: smaller id first), scored row_scores[r] + log P(token | row r):
  // host TopK, values float32 [rows, k'], indices int32 [rows, k']. k >= 1. The search passes each
  // hypothesis's log P so far as its row score; asking for k tokens instead of all V is what
  // keeps a GPU decoder from copying the whole distribution to the host every step.
  virtual TopK step(const std::vector<int32_t>& tokens, const std::vector<float>& row_scores,
                    int k) = 0;
  // Keeps rows: new row r continues old row source_rows[r] (reorders, replicates, shrinks).
  virtual void select_rows(const std::vector<int32_t>& source_rows) = 0;
};

struct SearchOptions {
  int beam_size = 4;
  float length_penalty = 0.6f;  // α of lp(Y) = ((5 + |Y|) / 6)^α; 0 disables
  int n_best = 1;
  int min_length = 0;  // EOS is forbidden before this many tokens
  int start_token = 2;
  int end_token = 3;
  // DeviceBeamSearch reports the sentence's stable prefix as it grows (streaming; see
  // engine/decoding/stable_prefix.h).
  bool report_stable_prefix = false;
};

// Lexical constraints: the token sequences one sentence's translation must contain (a
// glossary's target terms), searched by the beam rule's constrained step
// (kernels/beam_search_step.h).
using Constraints = std::vector<std::vector<int32_t>>;

struct Hypothesis {
  std::vector<int32_t> tokens;  // without the end token
  float score = 0.f;            // log P(Y|X) / lp(|Y|); |Y| counts the end token when present
  float log_prob = 0.f;         // log P(Y|X)
  // Filled after the search when alignments are asked for (engine/alignment.h), for the best
  // hypothesis of a sentence: [tokens.size(), source tokens + end token], row t the source
  // attention that chose tokens[t].
  std::vector<float> alignment;
};

// ((5 + length) / 6)^alpha: the one definition, beside the beam rule that ranks by it.
using kernels::length_penalty;

// A search in progress, advanced one token at a time, so that a caller can interleave several
// (the server steps all its in-flight batches in turn and admits new ones between steps).
class SearchRun {
 public:
  virtual ~SearchRun() = default;
  // Decodes one more token for every live sentence. Call only while !done().
  virtual void step() = 0;
  virtual bool done() const = 0;
  // Sentences still decoding (for admission decisions).
  virtual int live_sentences() const = 0;
  // Once done: per sentence, up to n_best hypotheses, best first.
  virtual std::vector<std::vector<Hypothesis>> take_results() = 0;
};

class Search {
 public:
  virtual ~Search() = default;
  // max_lengths[s]: most tokens sentence s may produce, the end token included. `decoder`
  // must outlive the run.
  virtual std::unique_ptr<SearchRun> start(IncrementalDecoder& decoder,
                                           const std::vector<int>& max_lengths,
                                           const SearchOptions& options) const = 0;
  // start() stepped to the end: per sentence, up to n_best hypotheses, best first.
  std::vector<std::vector<Hypothesis>> search(IncrementalDecoder& decoder,
                                              const std::vector<int>& max_lengths,
                                              const SearchOptions& options) const;
};

// Beam search: a sentence stops when beam_size hypotheses have finished, or when n_best have and
// no live hypothesis can beat the n_best-th (its score can only fall: log P only decreases and,
// for α >= 0, dividing by lp(max_length) is the best it can hope for), or at its max length.
std::unique_ptr<Search> make_beam_search();
// Greedy search: the most probable token at each step (beam size 1, n_best 1).
std::unique_ptr<Search> make_greedy_search();

}  // namespace xlate
