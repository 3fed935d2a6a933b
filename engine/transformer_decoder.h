// Binds a TransformerModel and one decoding state to the search interfaces.
#pragma once

#include "engine/decoding/device_beam_search.h"
#include "engine/transformer.h"

namespace xlate {

class TransformerDecoder : public IncrementalDecoder, public DeviceIncrementalDecoder {
 public:
  // A batch: encoder_output [B, S_src, C], one row per sentence; room for max_rows rows and
  // max_positions target positions; the self-attention caches in `storage` when it is given
  // (TransformerModel::start_decoding).
  TransformerDecoder(const TransformerModel& model, const Tensor& encoder_output,
                     const Tensor& source_lengths, int64_t max_rows, int64_t max_positions,
                     KvCacheStorage* storage = nullptr);
  // Slots for sentences that join and leave (TransformerModel::start_slots): no rows until
  // place_rows, sources through set_sources.
  struct Slots {
    int64_t sentences, source_tokens, rows_per_sentence, positions;
  };
  TransformerDecoder(const TransformerModel& model, const Slots& slots);

  // IncrementalDecoder, for a batch.
  TopK step(const std::vector<int32_t>& tokens, const std::vector<float>& row_scores,
            int k) override;
  void select_rows(const std::vector<int32_t>& source_rows) override;

  Device device() const override { return model_.placement().device; }
  TopK step_on_device(const Tensor& tokens, const Tensor& row_scores, int k,
                      const Tensor& wanted) override;
  void select_rows_on_device(const Tensor& source_rows) override;
  void place_rows(const std::vector<RowPlacement>& rows) override;

  // encoder_output [n, S, C] of sentences that will decode in sentence slots sentence_slots.
  void set_sources(const Tensor& encoder_output, const Tensor& source_lengths,
                   const std::vector<int32_t>& sentence_slots);

  // DecoderState::set_forced_tokens: the first outputs of the sentences in these slots.
  void set_forced_tokens(const std::vector<int32_t>& sentence_slots,
                         const std::vector<int32_t>& forced) {
    state_.set_forced_tokens(sentence_slots, forced);
  }

  // DecoderState::set_repeat_guards: the repetition guards of the sentences in these slots.
  void set_repeat_guards(const std::vector<int32_t>& sentence_slots,
                         const DecoderState::RepeatGuards& guards) {
    state_.set_repeat_guards(sentence_slots, guards);
  }

  // Logits [R, T, V] for T tokens per row at once (the teacher-forced pass).
  Tensor logits(const Tensor& tokens);

 private:
  const TransformerModel& model_;
  DecoderState state_;
};

}  // namespace xlate
