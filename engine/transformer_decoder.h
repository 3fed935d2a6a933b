// Binds a TransformerModel and one decoding state to the search interface.
#pragma once

#include "engine/decoding/device_beam_search.h"
#include "engine/transformer.h"

namespace xlate {

class TransformerDecoder : public DeviceIncrementalDecoder {
 public:
  // encoder_output [B, S_src, C]; room for max_rows rows and max_positions target positions.
  TransformerDecoder(const TransformerModel& model, const Tensor& encoder_output,
                     const Tensor& source_lengths, int64_t max_rows, int64_t max_positions);

  TopK step(const std::vector<int32_t>& tokens, const std::vector<float>& row_scores,
            int k) override;
  void select_rows(const std::vector<int32_t>& source_rows) override;
  Device device() const override { return model_.placement().device; }
  TopK step_on_device(const Tensor& tokens, const Tensor& row_scores, int k) override;
  void select_rows_on_device(const Tensor& source_rows) override;

  // Logits [R, T, V] for T tokens per row at once (the teacher-forced pass).
  Tensor logits(const Tensor& tokens);

 private:
  const TransformerModel& model_;
  DecoderState state_;
};

}  // namespace xlate
