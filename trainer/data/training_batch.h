// The tensors of one training step (or one rank's shard of it), built from corpus pairs.
//
// Dimension letters: N rows (pairs), S longest source, T longest decoder sequence.
// For a pair with source x (stored with its eos) and target y (stored without specials):
//   source_tokens  row = x, then pad_id             (x already ends with eos)
//   target_input   row = [decoder_start_id] + y, then pad_id    (what the decoder reads)
//   target_output  row = y + [eos_id], then pad_id              (what it must predict)
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model_config.h"
#include "engine/tensor.h"
#include "trainer/data/token_corpus.h"

namespace xlate::trainer {

struct TrainingBatch {
  Tensor source_tokens;   // int32 [N, S], pad-filled
  Tensor source_lengths;  // int32 [N]
  Tensor target_input;    // int32 [N, T]: decoder_start + y, padded
  Tensor target_output;   // int32 [N, T]: y + eos, padded with pad_id
  Tensor target_lengths;  // int32 [N]: |y| + 1
  int64_t source_token_count = 0;  // non-pad tokens of source_tokens
  int64_t target_token_count = 0;  // non-pad tokens of target_output (positions with a loss)
};

// Rows in the order of `pairs`; ids come from `ids` (pad_id, eos_id, decoder_start_id).
// `pairs` must index `corpus` (else std::out_of_range: a programming error). An empty `pairs`
// gives [0, 0] tensors.
TrainingBatch make_training_batch(const TokenCorpus& corpus, const std::vector<int64_t>& pairs,
                                  const ModelConfig& ids);

// Sizes of a batch without building it, e.g. for the global token count of a step.
struct BatchTokenCounts {
  int64_t rows = 0;
  int64_t source_tokens = 0;  // non-pad
  int64_t target_tokens = 0;  // non-pad decoder positions (|y| + 1 per row)
  int64_t longest_source = 0;
  int64_t longest_target = 0;  // decoder positions
  // What the batch occupies with padding: rows × (longest_source + longest_target).
  int64_t padded_tokens() const { return rows * (longest_source + longest_target); }
};
BatchTokenCounts count_batch_tokens(const TokenCorpus& corpus, const std::vector<int64_t>& pairs);

}  // namespace xlate::trainer
