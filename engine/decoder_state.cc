#include "engine/decoder_state.h"

#include <new>
#include <stdexcept>

#include "engine/ops/ops.h"

namespace xlate {

DecoderState::DecoderState(const Shape& shape, std::shared_ptr<KvCachePool> pool)
    : shape_(shape), device_(pool->device()), pool_(std::move(pool)),
      blocks_per_slot_(KvCachePool::blocks_for(shape.positions)) {
  const int64_t slots = shape.sentences * shape.rows_per_sentence;
  // The largest tables first, uninitialised: a shape too large for memory fails here, before
  // anything is written. Entries are written (decode_positions) before any attention reads
  // them.
  row_table_ = Tensor::empty({slots, shape.positions}, DType::kInt32, device_);
  // Entries past a slot's count are never read; zeros keep the whole table in the pool's range.
  host_slot_blocks_ = Tensor::zeros({slots, blocks_per_slot_}, DType::kInt32);
  slot_blocks_ = on_device(host_slot_blocks_);
  const auto sentences = static_cast<size_t>(shape.sentences);
  slot_block_counts_.assign(static_cast<size_t>(slots), 0);
  source_blocks_.resize(sentences);
  sentence_live_.assign(sentences, false);
  source_lengths_.assign(sentences, 0);
  forced_tokens_.resize(sentences);
  repeat_guards_.resize(sentences);
  place_rows({});
}

DecoderState::~DecoderState() {
  if (pool_ == nullptr) return;  // moved from
  for (int32_t sentence = 0; sentence < shape_.sentences; ++sentence) release(sentence);
}

Tensor DecoderState::on_device(const Tensor& host) const {
  return device_ == Device::kCPU ? host : host.to(device_);
}

void DecoderState::release(int32_t sentence) {
  std::vector<int32_t> blocks = std::move(source_blocks_[sentence]);
  source_blocks_[sentence].clear();
  int32_t* table = host_slot_blocks_.data<int32_t>();
  for (int64_t beam = 0; beam < shape_.rows_per_sentence; ++beam) {
    const int64_t slot = sentence * shape_.rows_per_sentence + beam;
    int32_t& count = slot_block_counts_[slot];
    blocks.insert(blocks.end(), table + slot * blocks_per_slot_,
                  table + slot * blocks_per_slot_ + count);
    count = 0;
  }
  pool_->give_back(blocks);
  sentence_live_[sentence] = false;
  source_lengths_[sentence] = 0;
}

void DecoderState::release_sentences(const std::vector<int32_t>& sentence_slots) {
  for (int32_t sentence : sentence_slots) release(sentence);
}

std::vector<int32_t> DecoderState::take_source_rows(const std::vector<int32_t>& sentence_slots,
                                                    const std::vector<int32_t>& lengths) {
  std::vector<int32_t> rows;
  try {
    for (size_t n = 0; n < sentence_slots.size(); ++n) {
      const int32_t sentence = sentence_slots[n];
      if (sentence < 0 || sentence >= shape_.sentences || lengths[n] < 0 ||
          lengths[n] > shape_.source_steps) {
        throw std::logic_error("take_source_rows: a slot or length out of range");
      }
      release(sentence);
      std::vector<int32_t>& blocks = source_blocks_[sentence];
      for (int64_t b = 0; b < KvCachePool::blocks_for(lengths[n]); ++b) {
        blocks.push_back(pool_->take());
      }
      for (int32_t s = 0; s < lengths[n]; ++s) {
        rows.push_back(static_cast<int32_t>(blocks[s / KvCachePool::kBlockPositions] *
                                                KvCachePool::kBlockPositions +
                                            s % KvCachePool::kBlockPositions));
      }
      source_lengths_[sentence] = lengths[n];
    }
  } catch (const std::bad_alloc&) {
    release_sentences(sentence_slots);
    throw;
  }
  return rows;
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
  xlate::penalize_repeats(logits, pool_->fed_tokens(), row_table_.view(0, {count, row_table_.dim(1)}),
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
  // Sentences whose rows all left give their blocks back; those placed now are live.
  std::vector<bool> live(sentence_live_.size(), false);
  for (int32_t sentence : sentences) live[sentence] = true;
  for (int32_t sentence = 0; sentence < shape_.sentences; ++sentence) {
    if (sentence_live_[sentence] && !live[sentence]) release(sentence);
  }
  sentence_live_ = std::move(live);
  const auto kept_count = static_cast<int64_t>(kept.size());
  gather_table_rows(on_device(Tensor::from_vector(kept, {kept_count})), kept_count);
  row_slots_ = on_device(Tensor::from_vector(slots, {count}));
  row_positions_ = on_device(Tensor::from_vector(positions, {count}));
  // The cross-attention keys of each row's sentence: the rows of its source blocks (the pool's
  // first row past its length, never read there).
  constexpr int64_t kBlock = KvCachePool::kBlockPositions;
  std::vector<int32_t> cross_rows(static_cast<size_t>(count * shape_.source_steps), 0);
  std::vector<int32_t> cross_lengths(static_cast<size_t>(count));
  for (int64_t r = 0; r < count; ++r) {
    const std::vector<int32_t>& blocks = source_blocks_[sentences[r]];
    for (int64_t s = 0; s < source_lengths_[sentences[r]]; ++s) {
      cross_rows[r * shape_.source_steps + s] =
          static_cast<int32_t>(blocks[s / kBlock] * kBlock + s % kBlock);
    }
    cross_lengths[r] = source_lengths_[sentences[r]];
  }
  cross_rows_ = on_device(Tensor::from_vector(cross_rows, {count, shape_.source_steps}));
  cross_lengths_ = on_device(Tensor::from_vector(cross_lengths, {count}));
  host_row_sentences_ = std::move(sentences);
  host_row_slots_ = slots;
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

void DecoderState::take_blocks(int64_t positions) {
  constexpr int64_t kBlock = KvCachePool::kBlockPositions;
  int32_t* table = host_slot_blocks_.data<int32_t>();
  for (size_t r = 0; r < host_row_slots_.size(); ++r) {
    const int64_t slot = host_row_slots_[r];
    const int64_t last = host_row_positions_[r] + length_ + positions - 1;
    if (last >= shape_.positions) {
      throw std::logic_error("advance: a row beyond the state's positions");
    }
    for (int32_t& count = slot_block_counts_[slot]; count <= last / kBlock; ++count) {
      table[slot * blocks_per_slot_ + count] = pool_->take();
      slot_blocks_stale_ = device_ != Device::kCPU;
    }
  }
  if (slot_blocks_stale_) {
    slot_blocks_.copy_from(host_slot_blocks_);
    slot_blocks_stale_ = false;
  }
}

DecoderState::StepTables DecoderState::advance(const Tensor& tokens) {
  const int64_t count = rows(), steps = tokens.dim(1);
  take_blocks(steps);
  StepTables tables;
  tables.row_positions = row_positions_;
  tables.length = length_;
  tables.cache_rows = Tensor::empty({count * steps}, DType::kInt32, device_);
  tables.self_lengths = Tensor::empty({count}, DType::kInt32, device_);
  decode_positions(row_table_, tables.cache_rows, tables.self_lengths, row_slots_,
                   row_positions_, slot_blocks_, length_, KvCachePool::kBlockPositions);
  tables.self_rows = row_table_.view(0, {count, row_table_.dim(1)});
  scatter_rows(pool_->fed_tokens(), tokens.reshape({count * steps, 1}), tables.cache_rows);
  self_lengths_ = tables.self_lengths;
  tables.cross_rows = cross_rows_;
  tables.cross_lengths = cross_lengths_;
  length_ += steps;
  return tables;
}

}  // namespace xlate
