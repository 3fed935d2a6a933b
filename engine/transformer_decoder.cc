#include "engine/transformer_decoder.h"

#include "engine/ops/ops.h"

namespace xlate {

TransformerDecoder::TransformerDecoder(const TransformerModel& model, const Tensor& encoder_output,
                                       const Tensor& source_lengths, int64_t max_rows,
                                       int64_t max_positions)
    : model_(model),
      state_(model.start_decoding(encoder_output, source_lengths, max_rows, max_positions)) {}

Tensor TransformerDecoder::step(const std::vector<int32_t>& tokens) {
  const int64_t rows = static_cast<int64_t>(tokens.size());
  Tensor logits = model_.decode(state_, Tensor::from_vector(tokens, {rows, 1}));
  Tensor log_probs = logits.reshape({rows, logits.dim(2)});
  log_softmax_forward(log_probs, log_probs);
  return log_probs;
}

void TransformerDecoder::select_rows(const std::vector<int32_t>& source_rows) {
  model_.select_rows(state_, source_rows);
}

Tensor TransformerDecoder::logits(const Tensor& tokens) { return model_.decode(state_, tokens); }

}  // namespace xlate
