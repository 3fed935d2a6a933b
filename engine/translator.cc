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
#include "engine/continuous_decoder.h"
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
               alignment, forced_start_tokens, repetition_penalty, no_repeat_ngram_size,
               constrained_beam_size] = options;
  return std::tie(beam_size, length_penalty, max_extra_length, max_output_length,
                  min_output_length, n_best, max_batch_size, workers, return_scores,
                  report_stable_prefixes, alignment, forced_start_tokens, repetition_penalty,
                  no_repeat_ngram_size, constrained_beam_size);
}

}  // namespace

bool operator==(const TranslationOptions& a, const TranslationOptions& b) {
  return all_fields(a) == all_fields(b);
}
bool operator!=(const TranslationOptions& a, const TranslationOptions& b) { return !(a == b); }

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
  if (constrained_beam_size != 0 &&
      (constrained_beam_size < n_best || constrained_beam_size > 256)) {
    return out_of_range(prefix, "constrained_beam_size", constrained_beam_size,
                        absl::StrCat("0 (beam_size) or in [n_best = ", n_best, ", 256]"));
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

SearchOptions TranslationOptions::search(const ModelConfig& config, bool constrained) const {
  SearchOptions search;
  search.beam_size = beam_for(constrained);
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
    if (constraints[i].size() > static_cast<size_t>(rules::kMaxConstraints)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sentence ", i, " has ", constraints[i].size(), " constraints; the limit is ",
          rules::kMaxConstraints));
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
    if (tokens > rules::kMaxConstraintTokens) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sentence ", i, " has constraints of ", tokens, " tokens in all; the limit is ",
          rules::kMaxConstraintTokens));
    }
    if (tokens >= max_lengths[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sentence ", i, " has constraints of ", tokens, " tokens; its translation may have ",
          max_lengths[i] - 1, " tokens at most (the output limit), so they cannot all fit"));
    }
  }
  return absl::OkStatus();
}

absl::Status check_source_tokens(const std::vector<std::vector<int32_t>>& sources,
                                 int64_t max_tokens, absl::string_view limit,
                                 int64_t vocabulary) {
  for (size_t i = 0; i < sources.size(); ++i) {
    if (static_cast<int64_t>(sources[i].size()) + 1 > max_tokens) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sentence ", i, " has ", sources[i].size() + 1, " tokens (with the end token); the "
          "limit is ", max_tokens, limit));
    }
    for (int32_t id : sources[i]) {
      if (id < 0 || id >= vocabulary) {
        return absl::InvalidArgumentError(absl::StrCat("sentence ", i, " has token id ", id,
                                                       " outside [0, ", vocabulary, ")"));
      }
    }
  }
  return absl::OkStatus();
}

namespace {

// The sentences of one TranslateTokens call, handed out to its decoders in `order`.
struct SentenceQueue {
  const std::vector<std::vector<int32_t>>& sources;
  const std::vector<Constraints>& constraints;  // empty, or one per source
  std::vector<size_t> order;
  int decoders = 1;
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
};

// Decodes sentences of `queue` in `decoder` until none is left: whenever the decoder has free
// slots it admits the next sentences, and each finished sentence's hypotheses go to
// results[its index]. Sentences are encoded ahead, up to a batch (`options.max_batch_size`)
// at a time: a step frees a slot or two, and an encoder pass over those alone runs slower per
// token. Near the queue's end a decoder takes only its share of what is left, so that the
// others are not left idle while it holds encoded sentences. Stops at the first failure, and
// tells the other decoders.
absl::Status decode_queue(ContinuousDecoder& decoder, SentenceQueue& queue,
                          const TranslationOptions& options,
                          std::vector<std::vector<Hypothesis>>& results) {
  std::vector<size_t> sentence_of_handle;  // the decoder numbers its handles from 0
  ContinuousDecoder::Encoded ahead;        // encoded, not yet admitted: ahead_order[admitted..)
  std::vector<size_t> ahead_order;
  size_t admitted = 0;
  auto fail = [&](absl::Status status) {
    queue.failed = true;
    return status;
  };
  while (!queue.failed) {
    const size_t free = static_cast<size_t>(decoder.free_slots());
    if (free > 0 && admitted == ahead_order.size() && queue.next < queue.order.size()) {
      const size_t left = queue.order.size() - queue.next;
      const size_t share = (left + static_cast<size_t>(queue.decoders) - 1) /
                           static_cast<size_t>(queue.decoders);
      const size_t wanted =
          std::max(free, std::min(share, static_cast<size_t>(options.max_batch_size)));
      const size_t first = queue.next.fetch_add(wanted);
      const size_t last = std::min(queue.order.size(), first + wanted);
      std::vector<std::vector<int32_t>> group;
      ahead_order.clear();
      for (size_t k = first; k < last; ++k) {
        group.push_back(queue.sources[queue.order[k]]);
        ahead_order.push_back(queue.order[k]);
      }
      admitted = 0;
      auto encoded = decoder.Encode(std::move(group));
      if (!encoded.ok()) return fail(encoded.status());
      ahead = *std::move(encoded);
    }
    const size_t count = std::min(free, ahead_order.size() - admitted);
    if (count > 0) {
      std::vector<Constraints> group_constraints;
      if (!queue.constraints.empty()) {
        for (size_t k = admitted; k < admitted + count; ++k) {
          group_constraints.push_back(queue.constraints[ahead_order[k]]);
        }
      }
      auto handles = decoder.Admit(ahead, static_cast<int64_t>(admitted),
                                   std::vector<TranslationOptions>(count, options),
                                   group_constraints);
      if (!handles.ok()) return fail(handles.status());
      for (size_t k = 0; k < count; ++k) {
        const auto handle = static_cast<size_t>((*handles)[k]);
        if (sentence_of_handle.size() <= handle) sentence_of_handle.resize(handle + 1);
        sentence_of_handle[handle] = ahead_order[admitted + k];
      }
      admitted += count;
    }
    if (decoder.live_sentences() == 0) break;
    for (ContinuousDecoder::Finished& finished : decoder.Step()) {
      if (!finished.status.ok()) return fail(finished.status);
      results[sentence_of_handle[static_cast<size_t>(finished.handle)]] =
          std::move(finished.hypotheses);
    }
    decoder.TakeProgress();  // nobody streams an offline translation
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::vector<Hypothesis>>> Translator::TranslateTokens(
    const std::vector<std::vector<int32_t>>& sources, const TranslationOptions& options,
    const std::vector<Constraints>& constraints) const {
  const ModelConfig& config = model_->config();
  if (auto status = options.ValidateFor(config); !status.ok()) return status;
  if (auto status = check_source_tokens(sources, max_input_tokens(),
                                        " (max_position_embeddings of the model)",
                                        config.vocab_size);
      !status.ok()) {
    return status;
  }
  std::vector<int> max_lengths;
  for (const std::vector<int32_t>& source : sources) {
    max_lengths.push_back(options.max_output_tokens(static_cast<int64_t>(source.size()),
                                                    config.max_positions,
                                                    config.end_forced_at_limit));
  }
  if (auto status = check_constraints(constraints, max_lengths, *model_); !status.ok()) {
    return status;
  }
  const Device device = model_->placement().device;
  if (options.workers > 1 && device != Device::kCPU) {
    return absl::InvalidArgumentError(absl::StrCat(
        "option workers = ", options.workers, ": several workers run on the CPU only"));
  }
  const OpBackend& backend = op_backend(device);
  const bool any_constrained = std::any_of(constraints.begin(), constraints.end(),
                                           [](const Constraints& c) { return !c.empty(); });
  const int widest_beam = std::max(options.beam_size, options.beam_for(any_constrained));
  if (widest_beam > backend.max_beam) {
    const bool constrained_beam = widest_beam != options.beam_size;
    return absl::InvalidArgumentError(absl::StrCat(
        "option ", constrained_beam ? "constrained_beam_size = " : "beam_size = ", widest_beam,
        " is out of range: the ", backend.name, " backend's beam search takes at most ",
        backend.max_beam, " beams"));
  }
  if (sources.empty()) return std::vector<std::vector<Hypothesis>>();

  // Every sentence goes through a continuous decoder: it takes the slot of one that finished,
  // so no batch waits for its longest sentence. Shortest first with one decoder; longest first
  // with several, so that the last ones to finish are short.
  SentenceQueue queue{sources, constraints, std::vector<size_t>(sources.size())};
  std::iota(queue.order.begin(), queue.order.end(), 0);
  std::stable_sort(queue.order.begin(), queue.order.end(), [&](size_t a, size_t b) {
    return sources[a].size() < sources[b].size();
  });
  const size_t batch = static_cast<size_t>(options.max_batch_size);
  const int workers = static_cast<int>(std::min<size_t>(
      static_cast<size_t>(options.workers), (sources.size() + batch - 1) / batch));
  if (workers > 1) std::reverse(queue.order.begin(), queue.order.end());
  queue.decoders = std::max(1, workers);
  ContinuousDecoderOptions limits;
  limits.max_sentences = static_cast<int>(std::min(batch, sources.size()));
  limits.max_beam_size = widest_beam;
  limits.max_source_tokens = 2;
  limits.max_target_tokens = 1;
  for (size_t i = 0; i < sources.size(); ++i) {
    limits.max_source_tokens =
        std::max(limits.max_source_tokens, static_cast<int>(sources[i].size()) + 1);
    limits.max_target_tokens = std::max(limits.max_target_tokens, max_lengths[i]);
  }
  std::vector<std::vector<Hypothesis>> results(sources.size());
  if (workers <= 1) {
    auto decoder = ContinuousDecoder::Create(*model_, limits);
    if (!decoder.ok()) return decoder.status();
    if (auto status = decode_queue(**decoder, queue, options, results); !status.ok()) {
      return status;
    }
    return results;
  }
  // Several decoders, each on a thread of its own whose products run on (the caller's OpenMP
  // threads / workers) threads: on a few cores, small batches side by side keep them busier.
  // The caller's OpenMP thread count stays as it is; what a worker throws is thrown here once
  // they are all done.
  const int threads_per_worker = std::max(1, omp_get_max_threads() / workers);
  std::vector<absl::Status> statuses(static_cast<size_t>(workers));
  std::vector<std::exception_ptr> thrown(static_cast<size_t>(workers));
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      omp_set_num_threads(threads_per_worker);
      try {
        auto decoder = ContinuousDecoder::Create(*model_, limits);
        statuses[w] = decoder.ok() ? decode_queue(**decoder, queue, options, results)
                                   : decoder.status();
        if (!statuses[w].ok()) queue.failed = true;
      } catch (...) {
        thrown[w] = std::current_exception();
        queue.failed = true;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int w = 0; w < workers; ++w) {
    if (thrown[w]) std::rethrow_exception(thrown[w]);
    if (!statuses[w].ok()) return statuses[w];
  }
  return results;
}

}  // namespace xlate
