#include "engine/transformer_decoder.h"

namespace xlate {

TransformerDecoder::TransformerDecoder(const TransformerModel& model, const Slots& slots,
                                       std::shared_ptr<KvCachePool> pool)
    : model_(model),
      state_(model.start_slots(slots.sentences, slots.source_tokens, slots.rows_per_sentence,
                               slots.positions, std::move(pool))) {}

TopK TransformerDecoder::step_on_device(const Tensor& tokens, const Tensor& row_scores, int k,
                                        const Tensor& wanted) {
  return model_.decode_top_k_on_device(state_, tokens, row_scores, k, wanted);
}

void TransformerDecoder::select_rows_on_device(const Tensor& source_rows) {
  state_.select_rows_on_device(source_rows);
}

void TransformerDecoder::place_rows(const std::vector<RowPlacement>& rows) {
  state_.place_rows(rows);
}

void TransformerDecoder::set_sources(const Tensor& encoder_output, const Tensor& source_lengths,
                                     const std::vector<int32_t>& sentence_slots) {
  model_.set_sources(state_, encoder_output, source_lengths, sentence_slots);
}

}  // namespace xlate
