#include "trainer/training/run_fingerprints.h"

#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "trainer/distributed/communicator.h"

namespace xlate::trainer {

uint64_t run_fingerprint(const ModelConfig& config, const TrainingOptions& options,
                         const BatchIterator& batches, int world_size) {
  const std::string text = absl::StrCat(
      config.ToJson(), "|", options.max_tokens, "|", options.max_sentences, "|",
      options.update_frequency, "|", options.seed, "|", batches.fingerprint(), "|", world_size);
  return fingerprint_bytes(text.data(), static_cast<int64_t>(text.size()));
}

uint64_t rank_agreement_fingerprint(const TrainingOptions& options, uint64_t run_fingerprint,
                                    Device device) {
  const auto& [data_directory, output_directory, batch_plan_path, initialize_from, device_name, precision, activations,
               architecture, max_tokens, max_sentences, update_frequency, max_steps,
               warmup_steps, learning_rate_scale, adam_beta1, adam_beta2, adam_epsilon,
               clip_norm, loss_scale, loss_scaler, seed, bucket_mb, zero_stage,
               gradient_reduction, checkpoint_every_steps, checkpoint_every_minutes,
               keep_checkpoints, validate_every_steps, bleu_sentences, bleu_beam_size,
               log_every_steps, plateau_warning_steps] = options;
  const auto& [preset, layers, d_model, d_ff, heads, d_k, d_v, dropout, activation_dropout,
               label_smoothing, positional, max_positions, norm_position] = architecture;
  const auto& [initial_scale, growth_interval, minimum_scale] = loss_scaler;
  static_cast<void>(data_directory), static_cast<void>(output_directory);
  static_cast<void>(batch_plan_path);
  static_cast<void>(device_name), static_cast<void>(keep_checkpoints);
  static_cast<void>(log_every_steps), static_cast<void>(plateau_warning_steps);
  const std::string text = absl::StrJoin(
      std::make_tuple(run_fingerprint, initialize_from, device == Device::kCUDA ? "cuda" : "cpu",
                      precision,
                      activations, preset, layers, d_model, d_ff, heads, d_k, d_v, dropout,
                      activation_dropout, label_smoothing, positional, max_positions,
                      norm_position, max_tokens,
                      max_sentences, update_frequency, max_steps, warmup_steps,
                      learning_rate_scale, adam_beta1, adam_beta2, adam_epsilon, clip_norm,
                      loss_scale, initial_scale, growth_interval, minimum_scale, seed, bucket_mb,
                      zero_stage, gradient_reduction, checkpoint_every_steps,
                      checkpoint_every_minutes, validate_every_steps, bleu_sentences,
                      bleu_beam_size),
      "|");
  return fingerprint_bytes(text.data(), static_cast<int64_t>(text.size()));
}

}  // namespace xlate::trainer
