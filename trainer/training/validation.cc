// The trainer's validation: loss and perplexity over the validation split, and BLEU of beam
// translations of its first sentences through the engine's Translator.
#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/model_directory.h"
#include "evaluation/bleu.h"
#include "trainer/data/shard.h"
#include "trainer/data/training_batch.h"
#include "trainer/training/precision_setup.h"
#include "trainer/training/trainer.h"

namespace xlate::trainer {

absl::Status Trainer::load_translator() {
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer =
      Tokenizer::Load(options_.data_directory + "/spm.model");
  if (!tokenizer.ok()) return tokenizer.status();
  // On the GPU the model reads the live float32 parameters where they are (no copy).
  translator_ = std::make_unique<Translator>(
      std::make_shared<TransformerModel>(config_, parameters_.weights(),
                                         Placement{device_, DType::kFloat32}),
      std::move(*tokenizer));
  return absl::OkStatus();
}

absl::StatusOr<double> Trainer::validation_bleu() {
  // The model copies the attention projections (and on the CPU packs every linear layer's
  // weight) when it is made: a new one sees this step's weights (the rest are views of the live
  // parameters).
  absl::Status loaded = load_translator();
  if (!loaded.ok()) return loaded;
  std::vector<std::vector<int32_t>> sources;
  std::vector<std::string> references;
  const int64_t count = std::min<int64_t>(options_.bleu_sentences, valid_->size());
  for (int64_t i = 0; i < count; ++i) {
    const TokenSpan source = valid_->source(i), target = valid_->target(i);
    sources.emplace_back(source.begin(), source.end() - 1);  // without the stored eos
    absl::StatusOr<std::string> text =
        translator_->tokenizer().decode(std::vector<int32_t>(target.begin(), target.end()));
    if (!text.ok()) return text.status();
    references.push_back(*text);
  }
  TranslationOptions options;
  options.beam_size = options_.bleu_beam_size;
  absl::StatusOr<std::vector<std::vector<Hypothesis>>> translated =
      translator_->TranslateTokens(sources, options);
  if (!translated.ok()) return translated.status();
  std::vector<std::string> hypotheses;
  for (const std::vector<Hypothesis>& best : *translated) {
    absl::StatusOr<std::string> text = translator_->tokenizer().decode(best.front().tokens);
    if (!text.ok()) return text.status();
    hypotheses.push_back(*text);
  }
  absl::StatusOr<evaluation::BleuScore> bleu =
      evaluation::corpus_bleu(hypotheses, references, evaluation::BleuOptions::sacrebleu());
  if (!bleu.ok()) return bleu.status();
  return bleu->score;
}

absl::Status Trainer::validate() {
  if (!valid_) return absl::OkStatus();
  std::optional<PrecisionScope> precision(std::in_place, device_, precision_);  // the loss only
  const Clock::time_point start = Clock::now();
  absl::StatusOr<BatchIterator> batches =
      BatchIterator::Create(*valid_, {options_.max_tokens, options_.max_sentences, 1, false});
  if (!batches.ok()) return batches.status();
  double sums[3] = {0, 0, 0};
  std::vector<PendingCrossEntropySums> losses;  // read after the last batch is queued
  for (int64_t b = 0; b < batches->batches_per_epoch(); ++b) {
    const std::vector<int64_t> pairs =
        shard(batches->next(), communicator_.rank(), communicator_.world_size());
    if (pairs.empty()) continue;
    const TrainingBatch batch = make_training_batch(*valid_, pairs, config_);
    losses.push_back(model_.forward(pass_weights(), inputs_of(batch), {}));
  }
  model_.release_activations();  // before the translations of validation BLEU
  for (PendingCrossEntropySums& pending : losses) {
    const CrossEntropySums& loss = pending.read();
    sums[0] += loss.loss;
    sums[1] += loss.nll;
    sums[2] += static_cast<double>(loss.tokens);
  }
  absl::Status status = communicator_.all_reduce_sum(sums, 3);
  if (!status.ok()) return status;
  ValidationReport report;
  report.step = state_.step;
  report.target_tokens = static_cast<int64_t>(sums[2]);
  report.loss = sums[2] > 0 ? sums[0] / sums[2] : 0;
  report.nll = sums[2] > 0 ? sums[1] / sums[2] : 0;
  precision.reset();  // the translations compute exactly, as the server will
  if (translator_) {
    absl::StatusOr<double> bleu = validation_bleu();
    if (!bleu.ok()) return bleu.status();
    report.bleu = *bleu;
    report.bleu_sentences = static_cast<int>(std::min<int64_t>(options_.bleu_sentences, valid_->size()));
  }
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (log_) log_->validation(report);
  return absl::OkStatus();
}

}  // namespace xlate::trainer
