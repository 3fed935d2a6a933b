#include "server/translate_checks.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/ops/backend.h"
#include "engine/target_language.h"
#include "server/grpc_status.h"
#include "server/language_code.h"
#include "text/utf8.h"

namespace xlate::server {
namespace {

grpc::Status invalid(const std::string& message) {
  return grpc::Status(grpc::INVALID_ARGUMENT, message);
}

}  // namespace

// A request's contents (Translate's, DetectLanguage's): at least one entry, each and all of them
// within their code-point limits.
grpc::Status check_contents(const google::protobuf::RepeatedPtrField<std::string>& contents,
                            const RequestLimits& limits) {
  if (contents.empty()) return invalid("contents is empty: send at least 1 text");
  int64_t request_code_points = 0;
  for (int i = 0; i < contents.size(); ++i) {
    const int64_t code_points = count_code_points(contents[i]);
    if (code_points > limits.max_entry_code_points) {
      return invalid(absl::StrCat(
          limits.document ? absl::StrCat("the file's paragraph ", i + 1)
                          : absl::StrCat("contents[", i, "]"),
          " has ", code_points, " code points; the limit is ", limits.max_entry_code_points,
          " (--max_entry_code_points)"));
    }
    request_code_points += code_points;
  }
  if (limits.document && request_code_points > limits.max_document_code_points) {
    return invalid(absl::StrCat("the file's text has ", request_code_points,
                                " code points; the limit is ", limits.max_document_code_points,
                                " (--max_document_code_points)"));
  }
  if (!limits.document && request_code_points > limits.max_request_code_points) {
    return invalid(absl::StrCat("contents has ", request_code_points,
                                " code points in all; the limit is ",
                                limits.max_request_code_points, " (--max_request_code_points)"));
  }
  return grpc::Status::OK;
}

std::optional<AlignmentOptions> alignment_options(const xlate::v1::TranslateRequest& request) {
  if (!request.has_alignment()) return std::nullopt;
  AlignmentOptions options;
  if (request.alignment().has_layer()) options.layer = request.alignment().layer();
  if (request.alignment().has_head()) options.head = request.alignment().head();
  return options;
}

grpc::Status check_request_text(const xlate::v1::TranslateRequest& request,
                                const ModelConfig& config, const RequestLimits& limits,
                                TranslationOptions& options, std::optional<SegmentedTexts>& texts) {
  for (const absl::Status& language :
       {check_language("source_language_code", request.source_language_code(), config.source_lang,
                       "from"),
        check_language("target_language_code", request.target_language_code(), config.target_lang,
                       "into")}) {
    if (!language.ok()) return to_grpc(language);
  }
  if (grpc::Status sized = check_contents(request.contents(), limits); !sized.ok()) return sized;
  const xlate::v1::DecodingOptions& given = request.options();
  if (given.has_beam_size()) options.beam_size = given.beam_size();
  if (given.has_length_penalty()) options.length_penalty = given.length_penalty();
  if (given.has_max_extra_length()) options.max_extra_length = given.max_extra_length();
  if (given.has_n_best()) options.n_best = given.n_best();
  if (given.has_repetition_penalty()) options.repetition_penalty = given.repetition_penalty();
  if (given.has_no_repeat_ngram_size()) options.no_repeat_ngram_size = given.no_repeat_ngram_size();
  if (given.has_constrained_beam_size()) {
    options.constrained_beam_size = given.constrained_beam_size();
  }
  if (options.beam_size < 1 || options.beam_size > limits.max_beam_size) {
    return invalid(absl::StrCat("options.beam_size = ", options.beam_size,
                                " is out of range: it must be in [1, ", limits.max_beam_size, "]"));
  }
  if (options.constrained_beam_size > limits.max_beam_size) {
    return invalid(absl::StrCat("options.constrained_beam_size = ", options.constrained_beam_size,
                                " is out of range: it must be 0 (beam_size) or in [n_best, ",
                                limits.max_beam_size, "] (--max_beam_size)"));
  }
  if (auto status = options.Validate("options."); !status.ok()) return to_grpc(status);
  options.alignment = alignment_options(request);
  if (options.alignment.has_value()) {
    auto status = check_alignment_options(*options.alignment, config, "alignment.");
    if (!status.ok()) return to_grpc(status);
  }

  // The sentence rules of the request's source language (a multilingual model's has none of its
  // own), else the model's.
  auto split = SegmentedTexts::Split(
      {request.contents().begin(), request.contents().end()},
      request.source_language_code().empty() ? config.source_lang : request.source_language_code(),
      Segmentation::kSentences);
  if (!split.ok()) return to_grpc(split.status());
  texts = *std::move(split);
  const int64_t sentence_count = static_cast<int64_t>(texts->sentences().size());
  if (limits.document && sentence_count > limits.max_document_sentences) {
    return invalid(absl::StrCat("the file's text holds ", sentence_count,
                                " sentences; the limit is ", limits.max_document_sentences,
                                " (--max_document_sentences)"));
  }
  if (!limits.document && sentence_count > limits.max_sentences_per_request) {
    return invalid(absl::StrCat("contents holds ", sentence_count, " sentences; the limit is ",
                                limits.max_sentences_per_request,
                                " (--max_sentences_per_request)"));
  }
  return grpc::Status::OK;
}

namespace {

// The language tokens, the checks of check_request_text and each sentence's source tokens within
// the model's limit.
grpc::Status check_sources(const ServedModel& model, const xlate::v1::TranslateRequest& request,
                           const RequestLimits& limits, TranslationOptions& options,
                           std::optional<SegmentedTexts>& texts,
                           std::vector<std::vector<int32_t>>& sources) {
  const Tokenizer& tokenizer = model.translator().tokenizer();
  // A multilingual model's languages are chosen by its language tokens (target_language.h), not
  // compared with one language of its directory.
  auto languages =
      language_tokens(tokenizer, request.source_language_code(), request.target_language_code());
  if (!languages.ok()) return to_grpc(languages.status());
  ModelConfig checked_languages = model.config();
  if (tokenizer.language_style() != LanguageTokenStyle::kNone) {
    checked_languages.target_lang.clear();
    if (tokenizer.language_style() == LanguageTokenStyle::kSourceAndForcedTarget) {
      checked_languages.source_lang.clear();
    }
  }
  grpc::Status status = check_request_text(request, checked_languages, limits, options, texts);
  if (!status.ok()) return status;
  options.forced_start_tokens = languages->forced_target;
  const int token_limit = model.max_input_tokens();
  if (limits.document) {
    // A file's overlong sentence (a long list, a table row) is translated in parts.
    texts->SplitLongSentences(
        [&tokenizer, &languages](absl::string_view sentence) {
          return source_token_count(tokenizer, *languages, sentence);
        },
        token_limit);
  }
  for (size_t s = 0; s < texts->sentences().size(); ++s) {
    const std::string& sentence = texts->sentences()[s];
    auto ids = tokenizer.encode(sentence);
    if (!ids.ok()) return to_grpc(ids.status());
    ids->insert(ids->begin(), languages->source_prefix.begin(), languages->source_prefix.end());
    if (static_cast<int64_t>(ids->size()) + 1 > token_limit) {
      const size_t entry = texts->text_of(s);
      return invalid(absl::StrCat("contents[", entry, "], sentence ",
                                  s - texts->first_sentence(entry) + 1, " (\"", excerpt(sentence),
                                  "\") has ", ids->size() + 1, " tokens; the limit is ",
                                  token_limit, " (--max_input_tokens, ", "end token included)"));
    }
    sources.push_back(*std::move(ids));
  }
  return grpc::Status::OK;
}

// forced_starts: empty, or per sentence its target prefix's tokens (the first sentence of each
// entry that has a target_prefix).
grpc::Status check_target_prefixes(const ServedModel& model,
                                   const xlate::v1::TranslateRequest& request,
                                   const RequestLimits& limits, const TranslationOptions& options,
                                   const SegmentedTexts& texts,
                                   const std::vector<std::vector<int32_t>>& sources,
                                   std::vector<std::vector<int32_t>>& forced_starts) {
  if (request.target_prefix_size() == 0) return grpc::Status::OK;
  if (request.target_prefix_size() != request.contents_size()) {
    return invalid(absl::StrCat("target_prefix has ", request.target_prefix_size(),
                                " entries; send none or one per entry of contents (",
                                request.contents_size(), ")"));
  }
  const ModelConfig& config = model.config();
  forced_starts.assign(sources.size(), {});
  for (int entry = 0; entry < request.target_prefix_size(); ++entry) {
    const std::string& prefix = request.target_prefix(entry);
    if (prefix.empty()) continue;
    const int64_t code_points = count_code_points(prefix);
    if (code_points > limits.max_entry_code_points) {
      return invalid(absl::StrCat("target_prefix[", entry, "] has ", code_points,
                                  " code points; the limit is ", limits.max_entry_code_points,
                                  " (--max_entry_code_points)"));
    }
    const size_t first = texts.first_sentence(static_cast<size_t>(entry));
    if (first == texts.end_sentence(static_cast<size_t>(entry))) {
      return invalid(absl::StrCat("contents[", entry,
                                  "] is blank, so it is not translated: "
                                  "target_prefix[",
                                  entry, "] cannot apply (send it empty)"));
    }
    auto ids = model.translator().tokenizer().encode_target(prefix);
    if (!ids.ok()) return to_grpc(ids.status());
    const size_t forced = ids->size() + options.forced_start_tokens.size();
    const int limit = options.max_output_tokens(static_cast<int64_t>(sources[first].size()),
                                                config.max_positions, config.end_forced_at_limit);
    if (static_cast<int64_t>(forced) >= limit) {
      return invalid(absl::StrCat("target_prefix[", entry, "] (\"", excerpt(prefix), "\") is ",
                                  ids->size(), " tokens; its sentence may have at most ", limit,
                                  " output tokens, the end token included (its source tokens + "
                                  "options.max_extra_length)"));
    }
    forced_starts[first] = *std::move(ids);
  }
  return grpc::Status::OK;
}

// The request's glossary_config over its sentences: `terms` per sentence (left empty without a
// glossary); NOT_FOUND for an unknown glossary name, INVALID_ARGUMENT for bad entries,
// UNIMPLEMENTED on a backend without constrained search.
grpc::Status check_glossary(const ServedModel& model, const xlate::v1::TranslateRequest& request,
                            const Glossaries* glossaries, const TranslationOptions& options,
                            const SegmentedTexts& texts,
                            const std::vector<std::vector<int32_t>>& sources,
                            const std::vector<std::vector<int32_t>>& forced_starts,
                            std::vector<SentenceTerms>& terms) {
  if (!request.has_glossary_config()) return grpc::Status::OK;
  const xlate::v1::GlossaryConfig& config = request.glossary_config();
  if (config.glossary().empty() && config.entries().empty()) return grpc::Status::OK;
  if (!op_backend(model.translator().model().placement().device).lexical_constraints) {
    return grpc::Status(grpc::UNIMPLEMENTED,
                        absl::StrCat("glossary_config: model \"", model.name(),
                                     "\" runs on a backend whose search has no glossary "
                                     "constraints"));
  }
  // The named glossary as the server holds it (no copy); a merged one with inline entries.
  std::shared_ptr<const Glossary> glossary = std::make_shared<const Glossary>();
  if (!config.glossary().empty()) {
    std::shared_ptr<const Glossary> named =
        glossaries ? glossaries->Find(config.glossary()) : nullptr;
    if (!named) {
      const std::vector<std::string> names =
          glossaries ? glossaries->names() : std::vector<std::string>();
      return grpc::Status(
          grpc::NOT_FOUND,
          absl::StrCat("glossary_config.glossary \"", config.glossary(),
                       "\" is not one of this server's glossaries (",
                       names.empty() ? "it has none" : absl::StrJoin(names, ", "), ")"));
    }
    glossary = std::move(named);
  }
  if (!config.entries().empty()) {
    std::vector<GlossaryEntry> entries;
    for (const xlate::v1::GlossaryEntry& entry : config.entries()) {
      entries.push_back({entry.source(), entry.target()});
    }
    auto inline_glossary = Glossary::FromEntries(entries, "glossary_config.entries");
    if (!inline_glossary.ok()) return to_grpc(inline_glossary.status());
    glossary = std::make_shared<const Glossary>(glossary->With(*inline_glossary));
  }
  const ModelConfig& model_config = model.config();
  std::vector<int> limits, forced;
  for (size_t s = 0; s < sources.size(); ++s) {
    limits.push_back(options.max_output_tokens(static_cast<int64_t>(sources[s].size()),
                                               model_config.max_positions,
                                               model_config.end_forced_at_limit));
    forced.push_back(static_cast<int>(options.forced_start_tokens.size() +
                                      (forced_starts.empty() ? 0 : forced_starts[s].size())));
  }
  TermTokenRules rules;
  rules.unk_id = model_config.unk_id;
  rules.no_repeat_ngram_size = options.no_repeat_ngram_size;
  auto found = find_terms(*glossary, config.ignore_case(), texts.sentences(),
                          model.translator().tokenizer(), limits, forced, rules);
  if (!found.ok()) return to_grpc(found.status());
  terms = *std::move(found);
  return grpc::Status::OK;
}

}  // namespace

grpc::Status check_translate_request(const ServedModel& model,
                                     const xlate::v1::TranslateRequest& request,
                                     const RequestLimits& limits, const Glossaries* glossaries,
                                     CheckedRequest& checked) {
  grpc::Status status =
      check_sources(model, request, limits, checked.options, checked.texts, checked.sources);
  if (status.ok()) {
    status = check_target_prefixes(model, request, limits, checked.options, *checked.texts,
                                   checked.sources, checked.forced_starts);
  }
  if (status.ok()) {
    status = check_glossary(model, request, glossaries, checked.options, *checked.texts,
                            checked.sources, checked.forced_starts, checked.terms);
  }
  return status;
}

}  // namespace xlate::server
