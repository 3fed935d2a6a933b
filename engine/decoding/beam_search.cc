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
    std::vector<float> row_scores;
    for (int32_t s : active_) {
      for (const Hypothesis& hypothesis : beams_[s].live) row_scores.push_back(hypothesis.log_prob);
    }
    const TopK top = decoder_.step(last_tokens_, row_scores, candidates_per_row(options_));
    const int64_t k = top.values.dim(1);
    std::vector<int32_t> rows, next_active;
    std::vector<int32_t> source_beams;
    last_tokens_.clear();
    for (size_t i = 0, first_row = 0; i < active_.size(); ++i) {
      SentenceBeam& sentence = beams_[active_[i]];
      const size_t live = sentence.live.size();
      const int64_t offset = static_cast<int64_t>(first_row) * k;
      advance(sentence, top.values.data<float>() + offset, top.indices.data<int32_t>() + offset, k,
              length_, options_, source_beams);
      if (!sentence.done) {
        next_active.push_back(active_[i]);
        for (size_t b = 0; b < sentence.live.size(); ++b) {
          rows.push_back(static_cast<int32_t>(first_row) + source_beams[b]);
          last_tokens_.push_back(sentence.live[b].tokens.back());
        }
      }
      first_row += live;
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
