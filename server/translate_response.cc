#include "server/translate_response.h"

#include <algorithm>
#include <string>
#include <utility>

#include "server/grpc_status.h"
#include "server/translate_checks.h"

namespace xlate::server {
namespace {

// decoded[s][k]: the text of hypothesis k of sentence s.
absl::StatusOr<std::vector<std::vector<std::string>>> decode_all(
    const Tokenizer& tokenizer, const std::vector<std::vector<Hypothesis>>& results) {
  std::vector<std::vector<std::string>> decoded(results.size());
  for (size_t s = 0; s < results.size(); ++s) {
    for (const Hypothesis& hypothesis : results[s]) {
      auto text = tokenizer.decode(hypothesis.tokens);
      if (!text.ok()) return text.status();
      decoded[s].push_back(*std::move(text));
    }
  }
  return decoded;
}

// A sentence's glossary terms, each said to be applied when it was a constraint and the best
// translation holds its target.
void add_glossary_terms(const SentenceTerms& terms, const std::string& best,
                        xlate::v1::Translation& translation) {
  for (const TermUse& use : terms.uses) {
    xlate::v1::GlossaryTerm* term = translation.add_glossary_terms();
    term->set_source(use.source);
    term->set_target(use.target);
    term->set_applied(use.constrained && best.find(use.target) != std::string::npos);
    if (!use.note.empty()) {
      term->set_note(use.note);
    } else if (!term->applied()) {
      term->set_note("the translation's pieces spell the target otherwise");
    }
  }
}

// The alignment of a sentence (its source as cut and its token ids, its best hypothesis) in the
// reply's words.
grpc::Status add_alignment(const Translator& translator, const AlignmentOptions& options,
                           const std::string& source, const std::vector<int32_t>& source_ids,
                           const std::string& target, const Hypothesis& best,
                           xlate::v1::SentenceAlignment& alignment) {
  const Tokenizer& tokenizer = translator.tokenizer();
  const ModelConfig& config = translator.model().config();
  alignment.set_source_text(source);
  alignment.set_target_text(target);
  for (int32_t id : source_ids) alignment.add_source_tokens(tokenizer.source_piece_of(id));
  alignment.add_source_tokens(tokenizer.source_piece_of(config.eos_id));
  for (int32_t id : best.tokens) alignment.add_target_tokens(tokenizer.piece_of(id));
  const size_t width = source_ids.size() + 1;
  if (best.alignment.size() != best.tokens.size() * width) {
    return grpc::Status(grpc::INTERNAL, "the alignment does not match its sentence");
  }
  for (size_t t = 0; t < best.tokens.size(); ++t) {
    auto* weights = alignment.add_target()->mutable_source_weights();
    weights->Add(best.alignment.begin() + t * width, best.alignment.begin() + (t + 1) * width);
  }
  alignment.set_layer(options.resolved_layer(config.decoder_layers));
  alignment.set_head(options.head);
  return grpc::Status::OK;
}

}  // namespace

grpc::Status respond(const ServedModel& model, const xlate::v1::TranslateRequest& request,
                     const SegmentedTexts& texts,
                     const std::vector<std::vector<int32_t>>& aligned_sources, int n_best,
                     const std::vector<std::vector<Hypothesis>>& results,
                     const std::vector<SentenceTerms>& terms,
                     xlate::v1::TranslateResponse& response) {
  const bool with_scores = request.options().return_scores();
  const std::optional<AlignmentOptions> alignment = alignment_options(request);
  const bool with_hypotheses = n_best > 1 || with_scores;
  auto decoded = decode_all(model.translator().tokenizer(), results);
  if (!decoded.ok()) return to_grpc(decoded.status());
  for (size_t entry = 0; entry < texts.text_count(); ++entry) {
    xlate::v1::Translation* translation = response.add_translations();
    const size_t first = texts.first_sentence(entry), end = texts.end_sentence(entry);
    if (first == end) {  // blank: back as it came, never decoded, and without a score
      translation->set_translated_text(texts.text(entry));
      if (with_hypotheses) translation->add_hypotheses()->set_text(texts.text(entry));
      continue;
    }
    // Hypothesis k of an entry joins hypothesis k of each of its sentences; its score is the sum of
    // theirs. A search that finished fewer than n_best hypotheses of a sentence gives its entry as
    // many (never copies of one to make up the count).
    size_t hypotheses = static_cast<size_t>(with_hypotheses ? n_best : 1);
    for (size_t s = first; s < end; ++s) hypotheses = std::min(hypotheses, (*decoded)[s].size());
    for (size_t k = 0; k < hypotheses; ++k) {
      std::vector<std::string> sentences;
      float score = 0;
      for (size_t s = first; s < end; ++s) {
        sentences.push_back((*decoded)[s][k]);
        score += results[s][k].score;
      }
      std::string text = texts.Join(entry, sentences);
      if (k == 0) translation->set_translated_text(text);
      if (!with_hypotheses) break;
      xlate::v1::Hypothesis* hypothesis = translation->add_hypotheses();
      hypothesis->set_text(std::move(text));
      if (with_scores) hypothesis->set_score(score);
    }
    for (size_t s = first; !terms.empty() && s < end; ++s) {
      add_glossary_terms(terms[s], (*decoded)[s].front(), *translation);
    }
    for (size_t s = first; alignment.has_value() && s < end; ++s) {
      grpc::Status aligned =
          add_alignment(model.translator(), *alignment, texts.sentences()[s], aligned_sources[s],
                        (*decoded)[s].front(), results[s].front(), *translation->add_alignments());
      if (!aligned.ok()) return aligned;
    }
  }
  response.set_model(model.name());
  return grpc::Status::OK;
}

grpc::Status respond_documents(const ServedModel& model, const DocumentBatch& documents,
                               const SegmentedTexts& runs,
                               const std::vector<std::vector<int32_t>>& aligned_sources,
                               const std::vector<std::vector<Hypothesis>>& results,
                               const std::vector<SentenceTerms>& terms,
                               xlate::v1::TranslateResponse& response) {
  const Tokenizer& tokenizer = model.translator().tokenizer();
  auto decoded = decode_all(tokenizer, results);
  if (!decoded.ok()) return to_grpc(decoded.status());
  std::vector<std::string> best;
  std::vector<AlignedSentence> aligned;
  for (size_t s = 0; s < decoded->size(); ++s) {
    best.push_back((*decoded)[s].front());
    if (!documents.needs_word_links()) continue;
    aligned.push_back(aligned_sentence(tokenizer, runs.sentences()[s], aligned_sources[s],
                                       best.back(), results[s].front(),
                                       terms.empty() ? nullptr : &terms[s]));
  }
  auto entries = documents.Rebuild(runs, best, aligned);
  if (!entries.ok()) return to_grpc(entries.status());
  for (size_t entry = 0; entry < entries->size(); ++entry) {
    xlate::v1::Translation* translation = response.add_translations();
    translation->set_translated_text(std::move((*entries)[entry]));
    // The glossary terms of the entry's runs, in order. (A request without runs has one blank run,
    // which no entry holds.)
    const size_t end_run = std::min(documents.first_run(entry + 1), runs.text_count());
    for (size_t run = documents.first_run(entry); !terms.empty() && run < end_run; ++run) {
      for (size_t s = runs.first_sentence(run); s < runs.end_sentence(run); ++s) {
        add_glossary_terms(terms[s], best[s], *translation);
      }
    }
  }
  response.set_model(model.name());
  return grpc::Status::OK;
}

}  // namespace xlate::server
