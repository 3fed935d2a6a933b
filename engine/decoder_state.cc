#include "engine/decoder_state.h"

#include <stdexcept>

#include "engine/ops/ops.h"

namespace xlate {

DecoderState::DecoderState(const Shape& shape, std::vector<DecoderLayerCache> layers,
                           Device device)
    : shape_(shape), device_(device), layers_(std::move(layers)),
      source_lengths_(static_cast<size_t>(shape.sentences), 0),
      forced_tokens_(static_cast<size_t>(shape.sentences)),
      repeat_guards_(static_cast<size_t>(shape.sentences)) {
  // Entries are written (decode_positions) before any attention reads them.
  row_table_ = Tensor::empty({shape.sentences * shape.rows_per_sentence, shape.positions},
                             DType::kInt32, device_);
  fed_tokens_ = Tensor::empty({shape.positions * shape.sentences * shape.rows_per_sentence, 1},
                              DType::kInt32, device_);
  place_rows({});
}

Tensor DecoderState::on_device(const Tensor& host) const {
  return device_ == Device::kCPU ? host : host.to(device_);
}

void DecoderState::set_source_lengths(const std::vector<int32_t>& sentence_slots,
                                      const std::vector<int32_t>& lengths) {
  for (size_t n = 0; n < sentence_slots.size(); ++n) {
    source_lengths_.at(static_cast<size_t>(sentence_slots[n])) = lengths[n];
  }
}

void DecoderState::set_forced_tokens(const std::vector<int32_t>& sentence_slots,
                                     const std::vector<int32_t>& forced) {
  for (int32_t slot : sentence_slots) forced_tokens_.at(static_cast<size_t>(slot)) = forced;
}

void DecoderState::set_repeat_guards(const std::vector<int32_t>& sentence_slots,
                                     const RepeatGuards& guards) {
  for (int32_t slot : sentence_slots) repeat_guards_.at(static_cast<size_t>(slot)) = guards;
}

void DecoderState::penalize_repeats(Tensor& logits) const {
  const auto count = static_cast<int64_t>(host_row_sentences_.size());
  std::vector<float> penalties(static_cast<size_t>(count));
  std::vector<int32_t> ngram_sizes(static_cast<size_t>(count));
  bool any = false;
  for (int64_t r = 0; r < count; ++r) {
    const RepeatGuards& guards = repeat_guards_[host_row_sentences_[r]];
    penalties[r] = guards.repetition_penalty;
    ngram_sizes[r] = guards.no_repeat_ngram_size;
    any = any || guards.any();
  }
  if (!any) return;
  xlate::penalize_repeats(logits, fed_tokens_, row_table_.view(0, {count, row_table_.dim(1)}),
                          self_lengths_, on_device(Tensor::from_vector(penalties, {count})),
                          on_device(Tensor::from_vector(ngram_sizes, {count})));
}

std::vector<DecoderState::ForcedToken> DecoderState::forced_next_step() const {
  std::vector<ForcedToken> rows;
  for (size_t r = 0; r < host_row_sentences_.size(); ++r) {
    // The input at position p predicts output token p (the decoder starts from its start token).
    const int64_t position = host_row_positions_[r] + length_;
    const std::vector<int32_t>& forced = forced_tokens_[host_row_sentences_[r]];
    if (position < static_cast<int64_t>(forced.size())) {
      rows.push_back({static_cast<int32_t>(r), forced[static_cast<size_t>(position)]});
    }
  }
  return rows;
}

void DecoderState::place_rows(const std::vector<RowPlacement>& rows) {
  std::vector<int32_t> slots;
  for (const RowPlacement& row : rows) {
    if (row.sentence < 0 || row.sentence >= shape_.sentences || row.beam < 0 ||
        row.beam >= shape_.rows_per_sentence) {
      throw std::logic_error("place_rows: a row beyond its sentence slots or rows per sentence");
    }
    slots.push_back(static_cast<int32_t>(row.sentence * shape_.rows_per_sentence + row.beam));
  }
  place(rows, slots);
}

void DecoderState::place(const std::vector<RowPlacement>& rows,
                         const std::vector<int32_t>& slots) {
  const int64_t count = static_cast<int64_t>(rows.size());
  std::vector<int32_t> kept, positions, sentences;
  for (const RowPlacement& row : rows) {
    if (row.source_row >= 0) {
      if (kept.size() != positions.size()) {
        throw std::logic_error("place_rows: continuing rows must come before first rows");
      }
      kept.push_back(row.source_row);
    }
    positions.push_back(row.position);
    sentences.push_back(row.sentence);
  }
  const auto kept_count = static_cast<int64_t>(kept.size());
  gather_table_rows(on_device(Tensor::from_vector(kept, {kept_count})), kept_count);
  row_slots_ = on_device(Tensor::from_vector(slots, {count}));
  row_positions_ = on_device(Tensor::from_vector(positions, {count}));
  // The cross-attention keys of each row's sentence: rows of the batch-major [slots, S_src]
  // cache.
  std::vector<int32_t> cross_rows(static_cast<size_t>(count * shape_.source_steps));
  std::vector<int32_t> cross_lengths(static_cast<size_t>(count));
  for (int64_t r = 0; r < count; ++r) {
    for (int64_t s = 0; s < shape_.source_steps; ++s) {
      cross_rows[r * shape_.source_steps + s] =
          static_cast<int32_t>(sentences[r] * shape_.source_steps + s);
    }
    cross_lengths[r] = source_lengths_[sentences[r]];
  }
  cross_rows_ = on_device(Tensor::from_vector(cross_rows, {count, shape_.source_steps}));
  cross_lengths_ = on_device(Tensor::from_vector(cross_lengths, {count}));
  host_row_sentences_ = std::move(sentences);
  host_row_positions_ = std::move(positions);
  length_ = 0;
}

void DecoderState::select_rows_on_device(const Tensor& source_rows) {
  gather_table_rows(source_rows, source_rows.numel());
}

void DecoderState::gather_table_rows(const Tensor& source_rows, int64_t rows) {
  Tensor reordered = Tensor::empty(row_table_.shape(), DType::kInt32, device_);
  if (rows > 0) {
    Tensor live = reordered.view(0, {rows, row_table_.dim(1)});
    gather_rows(live, row_table_, source_rows);
  }
  row_table_ = std::move(reordered);
}

DecoderState::StepTables DecoderState::advance(const Tensor& tokens) {
  const int64_t count = rows(), steps = tokens.dim(1);
  StepTables tables;
  tables.row_positions = row_positions_;
  tables.length = length_;
  tables.cache_rows = Tensor::empty({count * steps}, DType::kInt32, device_);
  tables.self_lengths = Tensor::empty({count}, DType::kInt32, device_);
  decode_positions(row_table_, tables.cache_rows, tables.self_lengths, row_slots_,
                   row_positions_, length_, row_table_.dim(0));
  tables.self_rows = row_table_.view(0, {count, row_table_.dim(1)});
  scatter_rows(fed_tokens_, tokens.reshape({count * steps, 1}), tables.cache_rows);
  self_lengths_ = tables.self_lengths;
  tables.cross_rows = cross_rows_;
  tables.cross_lengths = cross_lengths_;
  length_ += steps;
  return tables;
}

}  // namespace xlate
