// The batch translation API: sentences (UTF-8 strings) + options -> translations in input
// order. The sentences, sorted by length, go through a continuous decoder of the call's own
// (engine/continuous_decoder.h, the server's engine): each takes the slot of one that finished.
// Translate() is const and keeps all per-call state on its own stack, so any number of threads
// may call it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/alignment.h"
#include "engine/decoding/search.h"
#include "engine/target_language.h"
#include "engine/tokenizer.h"
#include "engine/transformer.h"

namespace xlate {

struct TranslationOptions {
  // Outputs are at most input + max_extra_length tokens; longer is refused, not clamped.
  static constexpr int kMaxExtraLength = 1024;

  int beam_size = 4;             // 1 = greedy search
  float length_penalty = 0.6f;   // α
  int max_extra_length = 50;     // output tokens <= input tokens + this (the paper's +50)
  int max_output_length = 0;     // when > 0, a hard cap on output tokens as well
  int min_output_length = 0;     // no end token before this many tokens
  int n_best = 1;                // hypotheses returned per sentence (<= beam_size)
  int max_batch_size = 32;       // sentences decoding at once (per worker)
  // Decoders run at once by Translate/TranslateTokens, each on a thread of its own whose
  // products run on (the caller's OpenMP threads / workers, at least 1) threads, taking the
  // longest sentences first: on a few cores, small batches side by side keep them busier than
  // each batch split across them (CTranslate2's inter_threads). CPU models only.
  int workers = 1;
  bool return_scores = true;
  // Report each sentence's stable prefix as it grows (ContinuousDecoder::TakeProgress; the
  // server's TranslateStream). The translations are the same either way.
  bool report_stable_prefixes = false;
  // When set, each sentence's best hypothesis carries its alignment (Hypothesis::alignment),
  // one teacher-forced decoder pass after the search. Checked against the model where the
  // model is known (Translator, ContinuousDecoder).
  std::optional<AlignmentOptions> alignment;
  // Target tokens forced at the start of every output, each scored log P = 0 and kept in the
  // hypothesis's tokens: a multilingual M2M100/NLLB model's target-language token (transformers'
  // forced_bos_token_id), chosen by the caller from the request's language
  // (engine/target_language.h). Checked against the model's target vocabulary.
  std::vector<int32_t> forced_start_tokens;
  // Guards against repetition, off by default (the paper's decoding), in every search
  // (rules/repeat_guards.h): CTRL's penalty on the logit of every token already in the output
  // (> 1 discourages repeats; CTranslate2's and transformers' repetition_penalty), and a ban on
  // any token that would repeat an n-gram of the output (no_repeat_ngram_size; 0 = none).
  float repetition_penalty = 1.f;
  int no_repeat_ngram_size = 0;
  // The beam of a sentence with lexical constraints (a glossary's terms); 0: beam_size. Dynamic
  // beam allocation shares the beam between banks of hypotheses by the constraint tokens they
  // hold, so at beam 4 a bank may have one hypothesis: on 50 Multi30k sentences with one
  // glossary term each, sacreBLEU 34.64 at beam 4, 36.51 at 6, 36.59 at 8, 37.14 at 12, where
  // plain text gains nothing from a wider beam (docs/benchmarks.md#terminology-glossaries).
  // Sentences without constraints keep beam_size. 0, or in [n_best, 256].
  int constrained_beam_size = 0;
  static constexpr float kMaxRepetitionPenalty = 10.f;
  static constexpr int kMaxNoRepeatNgramSize = 64;

  // Names the option (after `prefix`: "option beam_size", or the server's "options.beam_size")
  // and its limit when out of range.
  absl::Status Validate(absl::string_view prefix = "option ") const;
  // Validate, then what depends on the model: the alignment's layer and head, the forced ids.
  absl::Status ValidateFor(const ModelConfig& config) const;
  DecoderState::RepeatGuards repeat_guards() const {
    return {repetition_penalty, no_repeat_ngram_size};
  }
  // The beam of a sentence with constraints (`constrained`) or without.
  int beam_for(bool constrained) const {
    return constrained && constrained_beam_size > 0 ? constrained_beam_size : beam_size;
  }
  // The search's settings for a sentence with constraints or without, with `config`'s start
  // and end tokens.
  SearchOptions search(const ModelConfig& config, bool constrained = false) const;
  // Most tokens a source of `source_tokens` tokens (end token excluded) may produce, the end
  // token included: the paper's input + max_extra_length, within max_output_length and
  // `capacity`, at least 1; one less (the place of the forced end token) for a model whose
  // end is forced at the limit (ModelConfig::end_forced_at_limit).
  int max_output_tokens(int64_t source_tokens, int capacity,
                        bool end_forced_at_limit = false) const;
};

// Whole-struct comparison (every field, derived in translator.cc so that adding a field without
// comparing it does not compile). Requests of any options share batches, each sentence with its
// own (ContinuousDecoder::Admit); equality only spares checking the same options twice.
bool operator==(const TranslationOptions& a, const TranslationOptions& b);
bool operator!=(const TranslationOptions& a, const TranslationOptions& b);

struct Translation {
  std::vector<std::string> hypotheses;  // n_best, best first
  std::vector<float> scores;            // log P / lp, when asked for
  // The sentence's piece ids and the best hypothesis's (no end tokens), with its alignment
  // when options.alignment asked: what alignments and attention pictures are labelled with.
  std::vector<int32_t> source_tokens;
  Hypothesis best;
};

// Lexical constraints (per sentence: DeviceBeamSearch::add) against the limits of `model`:
// empty, or one list per sentence of at most rules::kMaxConstraints non-empty constraints,
// rules::kMaxConstraintTokens tokens in all, ids in the target vocabulary other than the end
// and padding tokens, fewer than the sentence's max_lengths[i] (its output limit);
// INVALID_ARGUMENT naming the sentence and the limit, UNIMPLEMENTED on a backend without
// lexical constraints.
absl::Status check_constraints(const std::vector<Constraints>& constraints,
                               const std::vector<int>& max_lengths, const TransformerModel& model);

// Checks token-id sources (no end token) against a limit of `max_tokens` tokens each, the end
// token included (`limit` says whose limit it is, after the number), and a vocabulary of
// `vocabulary` ids: INVALID_ARGUMENT naming the sentence, and the limit or the id.
absl::Status check_source_tokens(const std::vector<std::vector<int32_t>>& sources,
                                 int64_t max_tokens, absl::string_view limit,
                                 int64_t vocabulary);

class Translator {
 public:
  // Loads config.json, model.safetensors and spm.model from `model_dir`.
  // The model computes on `placement` (engine/placement_flags.h reads it from flags).
  static absl::StatusOr<std::unique_ptr<Translator>> Load(const std::string& model_dir,
                                                         const Placement& placement = {});
  Translator(std::shared_ptr<const TransformerModel> model, std::unique_ptr<Tokenizer> tokenizer);

  // `languages`: a multilingual model's language tokens (engine/target_language.h), put
  // before each source and forced at the start of each output.
  // `constraints`: empty, or one per sentence: target token sequences its every hypothesis
  // must contain (check_constraints; a glossary's targets, document/glossary_terms.h).
  absl::StatusOr<std::vector<Translation>> Translate(const std::vector<std::string>& sentences,
                                                     const TranslationOptions& options,
                                                     const LanguageTokens& languages = {},
                                                     const std::vector<Constraints>& constraints = {}) const;

  // The same on token ids (no end token; it is appended): hypotheses per sentence. Decoding
  // state that does not fit in memory is a ResourceExhausted error naming its size; a beam
  // wider than the backend's search takes (15 on CUDA) is InvalidArgument.
  absl::StatusOr<std::vector<std::vector<Hypothesis>>> TranslateTokens(
      const std::vector<std::vector<int32_t>>& sources, const TranslationOptions& options,
      const std::vector<Constraints>& constraints = {}) const;

  const TransformerModel& model() const { return *model_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  // Most source tokens a sentence may have, the end token included.
  int max_input_tokens() const { return model_->config().max_positions; }

 private:
  std::shared_ptr<const TransformerModel> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace xlate
