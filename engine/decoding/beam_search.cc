#include <algorithm>
#include <cmath>
#include <queue>

#include "engine/decoding/beam_step.h"
#include "engine/decoding/search.h"

namespace xlate {
namespace {

class BeamSearchRun : public SearchRun {
 public:
  BeamSearchRun(IncrementalDecoder& decoder, const std::vector<int>& max_lengths,
                const SearchOptions& options)
      : decoder_(decoder), options_(options), beams_(max_lengths.size()) {
    for (size_t s = 0; s < beams_.size(); ++s) {
      beams_[s].live.push_back(Hypothesis{});
      beams_[s].max_length = max_lengths[s];
      active_.push_back(static_cast<int32_t>(s));
    }
    last_tokens_.assign(beams_.size(), options.start_token);
  }

  bool done() const override { return active_.empty(); }
  int live_sentences() const override { return static_cast<int>(active_.size()); }

  void step() override {
    ++length_;
    const Tensor log_probs = decoder_.step(last_tokens_);
    const int64_t vocabulary = log_probs.dim(1);
    std::vector<int64_t> first_row(active_.size());
    for (size_t i = 0, row = 0; i < active_.size(); row += beams_[active_[i]].live.size(), ++i) {
      first_row[i] = static_cast<int64_t>(row);
    }
    std::vector<std::vector<int32_t>> source_beams(active_.size());
#pragma omp parallel for schedule(dynamic) if (active_.size() > 1)
    for (size_t i = 0; i < active_.size(); ++i) {
      advance(beams_[active_[i]], log_probs.data<float>() + first_row[i] * vocabulary, vocabulary,
              length_, options_, source_beams[i]);
    }
    std::vector<int32_t> rows, next_active;
    last_tokens_.clear();
    for (size_t i = 0; i < active_.size(); ++i) {
      SentenceBeam& sentence = beams_[active_[i]];
      if (sentence.done) continue;
      next_active.push_back(active_[i]);
      for (size_t b = 0; b < sentence.live.size(); ++b) {
        rows.push_back(static_cast<int32_t>(first_row[i] + source_beams[i][b]));
        last_tokens_.push_back(sentence.live[b].tokens.back());
      }
    }
    active_ = std::move(next_active);
    if (!active_.empty()) decoder_.select_rows(rows);
  }

  std::vector<std::vector<Hypothesis>> take_results() override {
    std::vector<std::vector<Hypothesis>> results(beams_.size());
    for (size_t s = 0; s < beams_.size(); ++s) {
      std::vector<Hypothesis>& finished = beams_[s].finished;
      if (finished.size() > static_cast<size_t>(options_.n_best)) finished.resize(options_.n_best);
      results[s] = std::move(finished);
    }
    return results;
  }

 private:
  IncrementalDecoder& decoder_;
  const SearchOptions options_;
  std::vector<SentenceBeam> beams_;
  std::vector<int32_t> active_;  // sentences with live rows, in row order
  std::vector<int32_t> last_tokens_;
  int length_ = 0;  // tokens decoded so far
};

class BeamSearch : public Search {
 public:
  std::unique_ptr<SearchRun> start(IncrementalDecoder& decoder,
                                   const std::vector<int>& max_lengths,
                                   const SearchOptions& options) const override {
    return std::make_unique<BeamSearchRun>(decoder, max_lengths, options);
  }
};

}  // namespace

std::unique_ptr<Search> make_beam_search() { return std::make_unique<BeamSearch>(); }

}  // namespace xlate
