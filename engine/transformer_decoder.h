// Binds a TransformerModel and one decoding state of sentence slots to the device search
// (engine/decoding/device_beam_search.h): the continuous decoder's model side.
#pragma once

#include "engine/decoding/device_beam_search.h"
#include "engine/transformer.h"

namespace xlate {

class TransformerDecoder : public DeviceIncrementalDecoder {
 public:
  // Slots for sentences that join and leave (TransformerModel::start_slots), their keys and
  // values in `pool`: no rows until place_rows, sources through set_sources.
  struct Slots {
    int64_t sentences, source_tokens, rows_per_sentence, positions;
  };
  TransformerDecoder(const TransformerModel& model, const Slots& slots,
                     std::shared_ptr<KvCachePool> pool);

  Device device() const override { return model_.placement().device; }
  TopK step_on_device(const Tensor& tokens, const Tensor& row_scores, int k,
                      const Tensor& wanted) override;
  void select_rows_on_device(const Tensor& source_rows) override;
  void place_rows(const std::vector<RowPlacement>& rows) override;

  // encoder_output [n, S, C] of sentences that will decode in sentence slots sentence_slots.
  void set_sources(const Tensor& encoder_output, const Tensor& source_lengths,
                   const std::vector<int32_t>& sentence_slots);
  // DecoderState::release_sentences: sentences given sources that will not decode.
  void release_sentences(const std::vector<int32_t>& sentence_slots) {
    state_.release_sentences(sentence_slots);
  }

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

 private:
  const TransformerModel& model_;
  DecoderState state_;
};

}  // namespace xlate
