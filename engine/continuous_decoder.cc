#include "engine/continuous_decoder.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace xlate {

ContinuousDecoder::ContinuousDecoder(const TransformerModel& model,
                                     const ContinuousDecoderOptions& options)
    : model_(model), options_(options), sentences_(static_cast<size_t>(options.max_sentences)) {
  state_ = model.start_slots(options.max_sentences, options.max_source_tokens,
                             int64_t{options.max_sentences} * options.max_beam_size,
                             std::min(options.max_target_tokens, model.config().max_positions));
  for (int slot = options.max_sentences - 1; slot >= 0; --slot) free_.push_back(slot);
}

int ContinuousDecoder::live_sentences() const {
  return options_.max_sentences - static_cast<int>(free_.size());
}

absl::Status ContinuousDecoder::Check(const std::vector<std::vector<int32_t>>& sources,
                                      const TranslationOptions& options) const {
  if (auto status = options.Validate(); !status.ok()) return status;
  if (options.beam_size > options_.max_beam_size) {
    return absl::InvalidArgumentError(absl::StrCat("option beam_size = ", options.beam_size,
                                                   " is out of range: this decoder holds at most ",
                                                   options_.max_beam_size, " beams per sentence"));
  }
  if (sources.size() > free_.size()) {
    return absl::ResourceExhaustedError(absl::StrCat(sources.size(), " sentences but ",
                                                     free_.size(), " free decoding slots"));
  }
  const int vocabulary = model_.config().vocab_size;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (static_cast<int64_t>(sources[i].size()) + 1 > options_.max_source_tokens) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sentence ", i, " has ", sources[i].size() + 1, " tokens (with the end token); the "
          "limit is ", options_.max_source_tokens));
    }
    for (int32_t id : sources[i]) {
      if (id < 0 || id >= vocabulary) {
        return absl::InvalidArgumentError(
            absl::StrCat("sentence ", i, " has token id ", id, " outside [0, ", vocabulary, ")"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> ContinuousDecoder::Admit(
    const std::vector<std::vector<int32_t>>& sources, const TranslationOptions& options) {
  if (auto status = Check(sources, options); !status.ok()) return status;
  const ModelConfig& config = model_.config();
  const int64_t count = static_cast<int64_t>(sources.size());
  if (count == 0) return std::vector<int64_t>();
  int64_t padded = 0;
  for (const auto& source : sources) padded = std::max<int64_t>(padded, source.size() + 1);
  std::vector<int32_t> tokens(static_cast<size_t>(count * padded), config.pad_id);
  std::vector<int32_t> lengths(static_cast<size_t>(count)), slots(lengths);
  for (int64_t n = 0; n < count; ++n) {
    std::copy(sources[n].begin(), sources[n].end(), tokens.begin() + n * padded);
    tokens[n * padded + sources[n].size()] = config.eos_id;
    lengths[n] = static_cast<int32_t>(sources[n].size() + 1);
    slots[n] = free_.back();
    free_.pop_back();
  }
  const Tensor source_lengths = Tensor::from_vector(lengths, {count});
  const Tensor encoded = model_.encode(Tensor::from_vector(tokens, {count, padded}), source_lengths);
  model_.set_sources(state_, encoded, source_lengths, slots);

  const int capacity = static_cast<int>(state_.ancestry.size() / state_.row_capacity);
  std::vector<int64_t> handles;
  for (int64_t n = 0; n < count; ++n) {
    Sentence& sentence = sentences_[slots[n]];
    sentence = Sentence();
    sentence.handle = next_handle_++;
    sentence.beam.live.push_back(Hypothesis{});
    int limit = static_cast<int>(sources[n].size()) + options.max_extra_length;
    if (options.max_output_length > 0) limit = std::min(limit, options.max_output_length);
    sentence.beam.max_length = std::max(1, std::min(limit, capacity));
    sentence.search.beam_size = options.beam_size;
    sentence.search.length_penalty = options.length_penalty;
    sentence.search.n_best = options.n_best;
    sentence.search.min_length = options.min_output_length;
    sentence.search.start_token = config.decoder_start_id;
    sentence.search.end_token = config.eos_id;
    for (int b = 0; b < options_.max_beam_size; ++b) {
      state_.row_sentence[slots[n] * options_.max_beam_size + b] = slots[n];
    }
    handles.push_back(sentence.handle);
  }
  return handles;
}

void ContinuousDecoder::ReorderBeams(int slot, const std::vector<int32_t>& source_beams,
                                     int length) {
  const int64_t base = int64_t{slot} * options_.max_beam_size;
  std::vector<int32_t> reordered(source_beams.size());
  for (int s = 0; s <= length; ++s) {
    int32_t* row = state_.ancestry.data() + s * state_.row_capacity + base;
    for (size_t i = 0; i < source_beams.size(); ++i) reordered[i] = row[source_beams[i]];
    std::copy(reordered.begin(), reordered.end(), row);
  }
}

std::vector<ContinuousDecoder::Finished> ContinuousDecoder::Step() {
  std::vector<int32_t> tokens, rows, positions;
  std::vector<float> row_scores;
  std::vector<int> active;  // slots, in row order
  int candidates = 1;
  for (int slot = 0; slot < options_.max_sentences; ++slot) {
    const Sentence& sentence = sentences_[slot];
    if (sentence.handle < 0) continue;
    active.push_back(slot);
    candidates = std::max(candidates, candidates_per_row(sentence.search));
    for (size_t b = 0; b < sentence.beam.live.size(); ++b) {
      const Hypothesis& hypothesis = sentence.beam.live[b];
      tokens.push_back(hypothesis.tokens.empty() ? sentence.search.start_token
                                                 : hypothesis.tokens.back());
      rows.push_back(static_cast<int32_t>(slot * options_.max_beam_size + b));
      positions.push_back(sentence.length);
      row_scores.push_back(hypothesis.log_prob);
    }
  }
  std::vector<Finished> finished;
  if (active.empty()) return finished;
  const TopK top = model_.decode_slots(state_, tokens, rows, positions, row_scores, candidates);
  const int64_t k = top.values.dim(1);
  std::vector<std::vector<int32_t>> source_beams(active.size());
  for (size_t i = 0, row = 0; i < active.size(); ++i) {
    Sentence& sentence = sentences_[active[i]];
    const size_t live = sentence.beam.live.size();
    const int64_t offset = static_cast<int64_t>(row) * k;
    advance(sentence.beam, top.values.data<float>() + offset, top.indices.data<int32_t>() + offset,
            k, sentence.length + 1, sentence.search, source_beams[i]);
    row += live;
  }
  for (size_t i = 0; i < active.size(); ++i) {
    Sentence& sentence = sentences_[active[i]];
    if (sentence.beam.done) {
      std::vector<Hypothesis>& best = sentence.beam.finished;
      if (best.size() > static_cast<size_t>(sentence.search.n_best)) best.resize(sentence.search.n_best);
      finished.push_back({sentence.handle, std::move(best)});
      sentence = Sentence();
      free_.push_back(active[i]);
      continue;
    }
    ReorderBeams(active[i], source_beams[i], sentence.length);
    ++sentence.length;
  }
  return finished;
}

}  // namespace xlate
