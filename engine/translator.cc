#include "engine/translator.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <new>
#include <numeric>
#include <thread>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "engine/ops/backend.h"
#include "engine/transformer_decoder.h"
#include "text/utf8.h"

namespace xlate {
namespace {

// `value` as given: an int prints exactly (INT_MIN is -2147483648, not -2.14748e+09).
absl::Status out_of_range(absl::string_view prefix, const char* option,
                          const absl::AlphaNum& value, const std::string& limit) {
  return absl::InvalidArgumentError(absl::StrCat(prefix, option, " = ", value.Piece(),
                                                 " is out of range: it must be ", limit));
}

// Every field of the options, in declaration order. The structured binding names exactly as many
// fields as the struct has: a field added to TranslationOptions stops this from compiling until
// it is listed here too, so no comparison built on it can leave one out (as a hand-copied batch
// key once left out `alignment`, and requests inherited a neighbour's).
auto all_fields(const TranslationOptions& options) {
  const auto& [beam_size, length_penalty, max_extra_length, max_output_length, min_output_length,
               n_best, max_batch_size, workers, return_scores, report_stable_prefixes,
               alignment, forced_start_tokens, repetition_penalty, no_repeat_ngram_size] =
      options;
  return std::tie(beam_size, length_penalty, max_extra_length, max_output_length,
                  min_output_length, n_best, max_batch_size, workers, return_scores,
                  report_stable_prefixes, alignment, forced_start_tokens, repetition_penalty,
                  no_repeat_ngram_size);
}

}  // namespace

bool operator==(const TranslationOptions& a, const TranslationOptions& b) {
  return all_fields(a) == all_fields(b);
}
bool operator!=(const TranslationOptions& a, const TranslationOptions& b) { return !(a == b); }
bool operator<(const TranslationOptions& a, const TranslationOptions& b) {
  return all_fields(a) < all_fields(b);
}

absl::Status TranslationOptions::Validate(absl::string_view prefix) const {
  if (beam_size < 1 || beam_size > 256) {
    return out_of_range(prefix, "beam_size", beam_size, "in [1, 256]");
  }
  if (!(length_penalty >= 0.f && length_penalty <= 10.f)) {
    return out_of_range(prefix, "length_penalty", length_penalty, "in [0, 10]");
  }
  if (max_extra_length < 0 || max_extra_length > kMaxExtraLength) {
    return out_of_range(prefix, "max_extra_length", max_extra_length,
                        absl::StrCat("in [0, ", kMaxExtraLength, "]"));
  }
  if (max_output_length < 0) {
    return out_of_range(prefix, "max_output_length", max_output_length, ">= 0");
  }
  if (min_output_length < 0) {
    return out_of_range(prefix, "min_output_length", min_output_length, ">= 0");
  }
  if (n_best < 1 || n_best > beam_size) {
    return out_of_range(prefix, "n_best", n_best,
                        absl::StrCat("in [1, beam_size = ", beam_size, "]"));
  }
  if (max_batch_size < 1 || max_batch_size > 4096) {
    return out_of_range(prefix, "max_batch_size", max_batch_size, "in [1, 4096]");
  }
  if (workers < 1 || workers > 256) {
    return out_of_range(prefix, "workers", workers, "in [1, 256]");
  }
  if (!(repetition_penalty > 0.f && repetition_penalty <= kMaxRepetitionPenalty)) {
    return out_of_range(prefix, "repetition_penalty", repetition_penalty,
                        absl::StrCat("in (0, ", kMaxRepetitionPenalty, "]"));
  }
  if (no_repeat_ngram_size < 0 || no_repeat_ngram_size > kMaxNoRepeatNgramSize) {
    return out_of_range(prefix, "no_repeat_ngram_size", no_repeat_ngram_size,
                        absl::StrCat("in [0, ", kMaxNoRepeatNgramSize, "]"));
  }
  return absl::OkStatus();
}

absl::Status TranslationOptions::ValidateFor(const ModelConfig& config) const {
  if (auto status = Validate(); !status.ok()) return status;
  for (int32_t id : forced_start_tokens) {
    if (id < 0 || id >= config.target_vocab_size()) {
      return out_of_range("option ", "forced_start_tokens", id,
                          absl::StrCat("ids in [0, ", config.target_vocab_size(), ")"));
    }
  }
  if (!alignment.has_value()) return absl::OkStatus();
  return check_alignment_options(*alignment, config, "option alignment.");
}

SearchOptions TranslationOptions::search(const ModelConfig& config) const {
  SearchOptions search;
  search.beam_size = beam_size;
  search.length_penalty = length_penalty;
  search.n_best = n_best;
  search.min_length = min_output_length;
  search.start_token = config.decoder_start_id;
  search.end_token = config.eos_id;
  search.report_stable_prefix = report_stable_prefixes;
  return search;
}

int TranslationOptions::max_output_tokens(int64_t source_tokens, int capacity,
                                          bool end_forced_at_limit) const {
  int64_t limit = source_tokens + max_extra_length;
  if (max_output_length > 0) limit = std::min<int64_t>(limit, max_output_length);
  if (end_forced_at_limit) --limit;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(limit, capacity)));
}

absl::StatusOr<std::unique_ptr<Translator>> Translator::Load(const std::string& model_dir,
                                                             const Placement& placement) {
  auto model = TransformerModel::Load(model_dir, placement);
  if (!model.ok()) return model.status();
  auto tokenizer = Tokenizer::LoadDirectory(model_dir);
  if (!tokenizer.ok()) return tokenizer.status();
  const ModelConfig& config = (*model)->config();
  // M2M100's and NLLB's embeddings have a few rows more than the tokenizer has tokens (fairseq's
  // padding of the dictionary); those ids are never cut from text.
  const bool padded_rows = (*tokenizer)->language_style() ==
                                LanguageTokenStyle::kSourceAndForcedTarget &&
                            (*tokenizer)->vocab_size() <= config.vocab_size &&
                            config.target_vocab_size() == config.vocab_size;
  if (!padded_rows && ((*tokenizer)->vocab_size() != config.vocab_size ||
                       (*tokenizer)->target_vocab_size() != config.target_vocab_size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        model_dir, ": the tokenizer has ", (*tokenizer)->vocab_size(), " source and ",
        (*tokenizer)->target_vocab_size(), " target pieces but config.json says vocab_size = ",
        config.vocab_size, " and ", config.target_vocab_size(), " target pieces"));
  }
  return std::make_unique<Translator>(*std::move(model), *std::move(tokenizer));
}

Translator::Translator(std::shared_ptr<const TransformerModel> model,
                       std::unique_ptr<Tokenizer> tokenizer)
    : model_(std::move(model)), tokenizer_(std::move(tokenizer)) {}

absl::StatusOr<std::vector<Translation>> Translator::Translate(
    const std::vector<std::string>& sentences, const TranslationOptions& given_options,
    const LanguageTokens& languages, const std::vector<Constraints>& constraints) const {
  // The language token comes first, then any tokens the caller forces after it.
  TranslationOptions options = given_options;
  options.forced_start_tokens.insert(options.forced_start_tokens.begin(),
                                     languages.forced_target.begin(),
                                     languages.forced_target.end());
  std::vector<std::vector<int32_t>> sources;
  sources.reserve(sentences.size());
  for (size_t i = 0; i < sentences.size(); ++i) {
    size_t offset = 0;
    if (!is_valid_utf8(sentences[i], &offset)) {
      return absl::InvalidArgumentError(
          absl::StrCat("sentence ", i, " is not valid UTF-8 (bad byte at offset ", offset, ")"));
    }
    auto ids = tokenizer_->encode(sentences[i]);
    if (!ids.ok()) return ids.status();
    ids->insert(ids->begin(), languages.source_prefix.begin(), languages.source_prefix.end());
    sources.push_back(*std::move(ids));
  }
  auto hypotheses = TranslateTokens(sources, options, constraints);
  if (!hypotheses.ok()) return hypotheses.status();
  std::vector<Translation> translations(sentences.size());
  for (size_t i = 0; i < sentences.size(); ++i) {
    for (const Hypothesis& hypothesis : (*hypotheses)[i]) {
      auto text = tokenizer_->decode(hypothesis.tokens);
      if (!text.ok()) return text.status();
      translations[i].hypotheses.push_back(*std::move(text));
      if (options.return_scores) translations[i].scores.push_back(hypothesis.score);
    }
    translations[i].source_tokens = std::move(sources[i]);
    if (!(*hypotheses)[i].empty()) translations[i].best = std::move((*hypotheses)[i].front());
  }
  return translations;
}

BatchTranslation::BatchTranslation(std::unique_ptr<TransformerDecoder> decoder,
                                   std::unique_ptr<SearchRun> run)
    : decoder_(std::move(decoder)), run_(std::move(run)) {}

BatchTranslation::~BatchTranslation() = default;

bool BatchTranslation::Step() {
  if (!run_->done()) run_->step();
  return run_->done();
}

bool BatchTranslation::done() const { return run_->done(); }

int BatchTranslation::live_sentences() const { return run_->live_sentences(); }

std::vector<std::vector<Hypothesis>> BatchTranslation::TakeResults() {
  return run_->take_results();
}

absl::Status Translator::check_sources(const std::vector<std::vector<int32_t>>& sources,
                                       const TranslationOptions& options) const {
  if (auto status = options.ValidateFor(model_->config()); !status.ok()) return status;
  const ModelConfig& config = model_->config();
  for (size_t i = 0; i < sources.size(); ++i) {
    if (static_cast<int64_t>(sources[i].size()) + 1 > max_input_tokens()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sentence ", i, " has ", sources[i].size() + 1, " tokens (with the end token); the "
          "limit is ", max_input_tokens(), " (max_position_embeddings of the model)"));
    }
    for (int32_t id : sources[i]) {
      if (id < 0 || id >= config.vocab_size) {
        return absl::InvalidArgumentError(absl::StrCat("sentence ", i, " has token id ", id,
                                                       " outside [0, ", config.vocab_size, ")"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<BatchTranslation>> Translator::StartBatch(
    const std::vector<std::vector<int32_t>>& sources, const TranslationOptions& options) const {
  if (sources.empty()) return absl::InvalidArgumentError("a batch needs at least one sentence");
  if (auto status = check_sources(sources, options); !status.ok()) return status;
  std::vector<const std::vector<int32_t>*> batch;
  for (const std::vector<int32_t>& source : sources) batch.push_back(&source);
  try {
    return start_batch(batch, options);
  } catch (const std::bad_alloc&) {
    return out_of_memory(batch.size(), options);
  }
}

absl::Status check_constraints(const std::vector<Constraints>& constraints,
                               const std::vector<int>& max_lengths, const TransformerModel& model) {
  if (constraints.empty()) return absl::OkStatus();
  if (constraints.size() != max_lengths.size()) {
    return absl::InvalidArgumentError(absl::StrCat(constraints.size(), " constraint lists for ",
                                                   max_lengths.size(), " sentences"));
  }
  const OpBackend& backend = op_backend(model.placement().device);
  const ModelConfig& config = model.config();
  const int64_t vocabulary = config.target_vocab_size();
  for (size_t i = 0; i < constraints.size(); ++i) {
    if (!constraints[i].empty() && !backend.lexical_constraints) {
      return absl::UnimplementedError(absl::StrCat(
          "lexical constraints (glossaries) run on the CPU; this model is on the ",
          backend.name, " backend"));
    }
    if (constraints[i].size() > static_cast<size_t>(kernels::kMaxConstraints)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sentence ", i, " has ", constraints[i].size(), " constraints; the limit is ",
          kernels::kMaxConstraints));
    }
    int64_t tokens = 0;
    for (const std::vector<int32_t>& constraint : constraints[i]) {
      if (constraint.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("sentence ", i, " has an empty constraint"));
      }
      for (int32_t id : constraint) {
        if (id < 0 || id >= vocabulary || id == config.eos_id || id == config.pad_id) {
          return absl::InvalidArgumentError(absl::StrCat(
              "sentence ", i, " has constraint token id ", id, ": outside [0, ", vocabulary,
              ") or the end or padding token"));
        }
      }
      tokens += static_cast<int64_t>(constraint.size());
    }
    if (tokens > kernels::kMaxConstraintTokens) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sentence ", i, " has constraints of ", tokens, " tokens in all; the limit is ",
          kernels::kMaxConstraintTokens));
    }
    if (tokens >= max_lengths[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sentence ", i, " has constraints of ", tokens, " tokens; its translation may have ",
          max_lengths[i] - 1, " tokens at most (the output limit), so they cannot all fit"));
    }
  }
  return absl::OkStatus();
}

absl::Status Translator::out_of_memory(size_t sentences, const TranslationOptions& options) const {
  return absl::ResourceExhaustedError(absl::StrCat(
      "out of ", memory_name(model_->placement().device),
      " memory decoding a batch of ", sentences, " sentences with beam_size ", options.beam_size,
      " (", sentences * options.beam_size, " rows of KV cache): lower the batch size or the beam"));
}

absl::StatusOr<std::vector<std::vector<Hypothesis>>> Translator::TranslateTokens(
    const std::vector<std::vector<int32_t>>& sources, const TranslationOptions& options,
    const std::vector<Constraints>& constraints) const {
  if (auto status = check_sources(sources, options); !status.ok()) return status;
  if (!constraints.empty()) {
    const ModelConfig& config = model_->config();
    std::vector<int> max_lengths;
    for (const std::vector<int32_t>& source : sources) {
      max_lengths.push_back(options.max_output_tokens(static_cast<int64_t>(source.size()),
                                                      config.max_positions,
                                                      config.end_forced_at_limit));
    }
    if (auto status = check_constraints(constraints, max_lengths, *model_); !status.ok()) {
      return status;
    }
  }
  if (options.workers > 1 && model_->placement().device != Device::kCPU) {
    return absl::InvalidArgumentError(absl::StrCat(
        "option workers = ", options.workers, ": several workers run on the CPU only"));
  }
  std::vector<size_t> order(sources.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return sources[a].size() < sources[b].size();
  });
  std::vector<std::vector<const std::vector<int32_t>*>> batches;
  for (size_t begin = 0; begin < order.size(); begin += options.max_batch_size) {
    const size_t end = std::min(order.size(), begin + options.max_batch_size);
    batches.emplace_back();
    for (size_t k = begin; k < end; ++k) batches.back().push_back(&sources[order[k]]);
  }
  // Each batch's sentences' constraints (none without constraints).
  std::vector<std::vector<Constraints>> batch_constraints(batches.size());
  for (size_t b = 0, k = 0; !constraints.empty() && b < batches.size(); ++b) {
    for (size_t i = 0; i < batches[b].size(); ++i) {
      batch_constraints[b].push_back(constraints[order[k++]]);
    }
  }
  std::vector<std::vector<std::vector<Hypothesis>>> translated(batches.size());
  const int workers = static_cast<int>(
      std::min<size_t>(static_cast<size_t>(options.workers), batches.size()));
  if (workers <= 1) {
    KvCacheStorage storage;
    for (size_t b = 0; b < batches.size(); ++b) {
      if (absl::Status status = translate_batch(batches[b], options, translated[b], storage,
                                                batch_constraints[b]);
          !status.ok()) {
        return status;
      }
    }
  } else {
    // Longest batches first, each taken by the next free worker: the last ones to finish are
    // the shortest. The workers are threads of their own (the caller's OpenMP thread count
    // stays as it is); what one throws is thrown here once they are all done.
    const int threads_per_worker = std::max(1, omp_get_max_threads() / workers);
    std::vector<absl::Status> statuses(batches.size());
    std::vector<std::exception_ptr> thrown(batches.size());
    std::atomic<size_t> taken{0};
    std::atomic<bool> failed{false};
    auto work = [&] {
      omp_set_num_threads(threads_per_worker);
      KvCacheStorage storage;
      for (size_t k = taken++; k < batches.size() && !failed; k = taken++) {
        const size_t b = batches.size() - 1 - k;
        try {
          statuses[b] = translate_batch(batches[b], options, translated[b], storage,
                                        batch_constraints[b]);
          if (!statuses[b].ok()) failed = true;
        } catch (...) {
          thrown[b] = std::current_exception();
          failed = true;
        }
      }
    };
    std::vector<std::thread> threads;
    for (int w = 0; w < workers; ++w) threads.emplace_back(work);
    for (std::thread& thread : threads) thread.join();
    for (size_t b = 0; b < batches.size(); ++b) {
      if (thrown[b]) std::rethrow_exception(thrown[b]);
      if (!statuses[b].ok()) return statuses[b];
    }
  }
  std::vector<std::vector<Hypothesis>> results(sources.size());
  for (size_t b = 0, k = 0; b < batches.size(); ++b) {
    for (std::vector<Hypothesis>& sentence : translated[b]) results[order[k++]] = std::move(sentence);
  }
  return results;
}

absl::Status Translator::translate_batch(const std::vector<const std::vector<int32_t>*>& batch,
                                         const TranslationOptions& options,
                                         std::vector<std::vector<Hypothesis>>& results,
                                         KvCacheStorage& storage,
                                         const std::vector<Constraints>& constraints) const {
  try {
    const std::unique_ptr<BatchTranslation> translation =
        start_batch(batch, options, &storage, constraints);
    while (!translation->Step()) {
    }
    results = translation->TakeResults();
    if (options.alignment.has_value()) align_best(batch, results, *options.alignment);
  } catch (const std::bad_alloc&) {
    return out_of_memory(batch.size(), options);
  }
  return absl::OkStatus();
}

void Translator::align_best(const std::vector<const std::vector<int32_t>*>& sources,
                            std::vector<std::vector<Hypothesis>>& results,
                            const AlignmentOptions& options) const {
  std::vector<const std::vector<int32_t>*> aligned_sources;
  std::vector<Hypothesis*> best;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (results[i].empty()) continue;
    aligned_sources.push_back(sources[i]);
    best.push_back(&results[i].front());
  }
  align(*model_, aligned_sources, best, std::vector<const AlignmentOptions*>(best.size(), &options));
}

std::unique_ptr<BatchTranslation> Translator::start_batch(
    const std::vector<const std::vector<int32_t>*>& sources, const TranslationOptions& options,
    KvCacheStorage* storage, const std::vector<Constraints>& constraints) const {
  const ModelConfig& config = model_->config();
  const int64_t batch = static_cast<int64_t>(sources.size());
  int64_t padded = 0;
  for (const auto* source : sources) padded = std::max<int64_t>(padded, source->size() + 1);
  std::vector<int32_t> tokens(static_cast<size_t>(batch * padded), config.pad_id);
  std::vector<int32_t> lengths(static_cast<size_t>(batch));
  std::vector<int> max_lengths(static_cast<size_t>(batch));
  int longest_output = 1;
  for (int64_t b = 0; b < batch; ++b) {
    const std::vector<int32_t>& source = *sources[b];
    std::copy(source.begin(), source.end(), tokens.begin() + b * padded);
    tokens[b * padded + source.size()] = config.eos_id;
    lengths[b] = static_cast<int32_t>(source.size() + 1);
    max_lengths[b] = options.max_output_tokens(source.size(), config.max_positions,
                                               config.end_forced_at_limit);
    longest_output = std::max(longest_output, max_lengths[b]);
  }
  const Tensor source_lengths = Tensor::from_vector(lengths, {batch});
  const Tensor encoded =
      model_->encode(Tensor::from_vector(tokens, {batch, padded}), source_lengths);
  auto decoder = std::make_unique<TransformerDecoder>(
      *model_, encoded, source_lengths, batch * options.beam_size, longest_output, storage);
  std::vector<int32_t> slots(static_cast<size_t>(batch));
  for (int32_t b = 0; b < batch; ++b) slots[b] = b;
  decoder->set_forced_tokens(slots, options.forced_start_tokens);
  decoder->set_repeat_guards(slots, options.repeat_guards());
  const SearchOptions search_options = options.search(config);
  std::unique_ptr<SearchRun> run;
  const Device device = model_->placement().device;
  const bool constrained = std::any_of(constraints.begin(), constraints.end(),
                                       [](const Constraints& c) { return !c.empty(); });
  if (constrained) {
    // Lexical constraints are a rule of the device search (on the CPU too, any beam).
    run = start_device_beam_search(*decoder, max_lengths, search_options, 0, constraints);
  } else if (device != Device::kCPU && options.beam_size <= op_backend(device).max_beam) {
    // The search state stays on the GPU: no host round trip per token.
    run = start_device_beam_search(*decoder, max_lengths, search_options);
  } else {
    // On the host (the same rule), over the decoder's host rows: a sentence's first step
    // decodes one row, not beam_size.
    const std::unique_ptr<Search> search =
        options.beam_size == 1 ? make_greedy_search() : make_beam_search();
    run = search->start(*decoder, max_lengths, search_options);
  }
  return std::make_unique<BatchTranslation>(std::move(decoder), std::move(run));
}

}  // namespace xlate
