// The host beam search: the device search's rule and state (device_beam_search.h, one rule in
// kernels/beam_search_step.h) on the CPU, over any IncrementalDecoder, whose rows it keeps in
// step with the search's own. For decoders that only offer host rows: test decoders, and a GPU
// model decoding a beam wider than the device step takes.
#include "engine/decoding/device_beam_search.h"
#include "engine/decoding/search.h"

#include <cmath>
#include <stdexcept>

namespace xlate {
namespace {

// An IncrementalDecoder seen as the search's decoder on the CPU. The decoder starts with one row
// per sentence; the search's rows map onto the decoder's current rows (several onto one while
// they are copies), and the row selections of a step (beam reordering, then dropping finished
// sentences) are composed and applied once, before the next step.
class HostRowDecoder : public DeviceIncrementalDecoder {
 public:
  HostRowDecoder(IncrementalDecoder& decoder, int sentences)
      : decoder_(decoder), decoder_rows_(sentences) {}

  Device device() const override { return Device::kCPU; }

  // Decodes each distinct row once: a row that starts a sentence beside its first row (log P
  // -inf, the same decoder row and token) takes that row's candidates at -inf, which is what
  // decoding it would give, so a sentence's first step decodes one row, not beam_size.
  // Host searches have no lexical constraints (IncrementalDecoder scores no wanted tokens).
  TopK step_on_device(const Tensor& tokens, const Tensor& row_scores, int k,
                      const Tensor& wanted) override {
    if (wanted.defined()) throw std::logic_error("host beam search: wanted tokens");
    const int rows = static_cast<int>(source_.size());
    const int32_t* token = tokens.data<int32_t>();
    const float* score = row_scores.data<float>();
    std::vector<int32_t> decoded_source, decoded_tokens, decoded_row(source_.size());
    std::vector<float> decoded_scores;
    for (int r = 0; r < rows; ++r) {
      const bool repeats = r > 0 && source_[r] == source_[r - 1] && token[r] == token[r - 1] &&
                           score[r] == -INFINITY;
      if (repeats) {
        decoded_row[r] = decoded_row[r - 1];
        continue;
      }
      decoded_row[r] = static_cast<int32_t>(decoded_source.size());
      decoded_source.push_back(source_[r]);
      decoded_tokens.push_back(token[r]);
      decoded_scores.push_back(score[r]);
    }
    const int decoded = static_cast<int>(decoded_source.size());
    bool identity = decoded == decoder_rows_;
    for (int d = 0; identity && d < decoded; ++d) identity = decoded_source[d] == d;
    if (!identity) decoder_.select_rows(decoded_source);
    decoder_rows_ = decoded;
    source_ = decoded_row;
    stepped_ = true;
    const TopK top = decoder_.step(decoded_tokens, decoded_scores, k);
    if (decoded == rows) return top;
    const int64_t width = top.values.dim(1);
    TopK all{Tensor::empty({rows, width}, DType::kFloat32),
             Tensor::empty({rows, width}, DType::kInt32)};
    for (int r = 0; r < rows; ++r) {
      const int64_t from = decoded_row[r] * width, to = r * width;
      const bool repeat = r > 0 && decoded_row[r] == decoded_row[r - 1];
      for (int64_t j = 0; j < width; ++j) {
        all.indices.data<int32_t>()[to + j] = top.indices.data<int32_t>()[from + j];
        all.values.data<float>()[to + j] = repeat ? -INFINITY : top.values.data<float>()[from + j];
      }
    }
    return all;
  }

  void select_rows_on_device(const Tensor& source_rows) override {
    std::vector<int32_t> source(static_cast<size_t>(source_rows.numel()));
    for (size_t r = 0; r < source.size(); ++r) source[r] = source_[source_rows.data<int32_t>()[r]];
    source_ = std::move(source);
  }

  void place_rows(const std::vector<RowPlacement>& rows) override {
    std::vector<int32_t> source;
    for (const RowPlacement& row : rows) {
      if (row.source_row >= 0) {
        source.push_back(source_[row.source_row]);
      } else if (!stepped_) {
        source.push_back(row.sentence);  // the decoder's starting row of that sentence
      } else {
        throw std::logic_error("host beam search: a sentence joined after the first step");
      }
    }
    source_ = std::move(source);
  }

 private:
  IncrementalDecoder& decoder_;
  int decoder_rows_;             // rows the decoder holds now
  std::vector<int32_t> source_;  // the search's row r is (a copy of) the decoder's row source_[r]
  bool stepped_ = false;
};

class BeamSearchRun : public SearchRun {
 public:
  BeamSearchRun(IncrementalDecoder& decoder, const std::vector<int>& max_lengths,
                const SearchOptions& options)
      : rows_(decoder, static_cast<int>(max_lengths.size())),
        run_(start_device_beam_search(rows_, max_lengths, options)) {}

  void step() override { run_->step(); }
  bool done() const override { return run_->done(); }
  int live_sentences() const override { return run_->live_sentences(); }
  std::vector<std::vector<Hypothesis>> take_results() override { return run_->take_results(); }

 private:
  HostRowDecoder rows_;
  std::unique_ptr<SearchRun> run_;
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
