#include "document/glossary_terms.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "text/utf8.h"

namespace xlate {
namespace {

absl::Status check_target(const std::string& target, const std::vector<int32_t>& ids,
                          const TermTokenRules& rules) {
  if (std::find(ids.begin(), ids.end(), rules.unk_id) != ids.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "glossary target \"", excerpt(target), "\" holds characters the model's vocabulary "
        "cannot spell (they would become <unk>)"));
  }
  const int n = rules.no_repeat_ngram_size;
  if (n <= 0) return absl::OkStatus();
  std::set<std::vector<int32_t>> seen;
  for (size_t i = 0; i + n <= ids.size(); ++i) {
    if (!seen.insert(std::vector<int32_t>(ids.begin() + i, ids.begin() + i + n)).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "glossary target \"", excerpt(target), "\" repeats a sequence of ", n,
          " token(s), which options.no_repeat_ngram_size ", n, " forbids: the search could "
          "never write it (send a smaller no_repeat_ngram_size, or none)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<SentenceTerms>> find_terms(const Glossary& glossary, bool ignore_case,
                                                      const std::vector<std::string>& sentences,
                                                      const Tokenizer& tokenizer,
                                                      const std::vector<int>& output_limits,
                                                      const std::vector<int>& forced_tokens,
                                                      const TermTokenRules& rules) {
  std::vector<SentenceTerms> terms(sentences.size());
  for (size_t s = 0; s < sentences.size(); ++s) {
    SentenceTerms& sentence = terms[s];
    std::vector<std::string> targets;  // of sentence.constraints, in order
    int tokens = 0;
    for (const Glossary::Match& match : glossary.Find(sentences[s], ignore_case)) {
      const GlossaryEntry& entry = glossary.entries()[match.entry];
      TermUse use;
      use.source = sentences[s].substr(match.begin, match.end - match.begin);
      use.target = entry.target;
      if (std::find(targets.begin(), targets.end(), entry.target) != targets.end()) {
        use.constrained = true;  // the same target already constrains the sentence
        sentence.uses.push_back(std::move(use));
        continue;
      }
      auto ids = tokenizer.encode_target(entry.target);
      if (!ids.ok()) return ids.status();
      if (auto broken = check_target(entry.target, *ids, rules); !broken.ok()) return broken;
      const int length = static_cast<int>(ids->size());
      const int room = output_limits[s] - 1 - forced_tokens[s];
      if (targets.size() == static_cast<size_t>(rules::kMaxConstraints)) {
        use.note = absl::StrCat("the sentence has more than ", rules::kMaxConstraints,
                                " glossary targets; the first ", rules::kMaxConstraints,
                                " are applied");
      } else if (tokens + length > rules::kMaxConstraintTokens) {
        use.note = absl::StrCat("the sentence's glossary targets would have more than ",
                                rules::kMaxConstraintTokens, " tokens");
      } else if (length == 0) {
        use.note = "the target has no tokens";
      } else if (tokens + length > room) {
        use.note = absl::StrCat("the target's ", length, " tokens do not fit the sentence's "
                                "output limit of ", output_limits[s] - 1,
                                " tokens beside the others (options.max_extra_length)");
      } else {
        use.constrained = true;
        tokens += length;
        targets.push_back(entry.target);
        sentence.constraints.push_back(*std::move(ids));
      }
      sentence.uses.push_back(std::move(use));
    }
  }
  return terms;
}

absl::StatusOr<std::vector<SentenceTerms>> glossary_constraints(
    const Glossary& glossary, bool ignore_case, const std::vector<std::string>& sentences,
    const Translator& translator, const TranslationOptions& options,
    const LanguageTokens& languages) {
  const ModelConfig& config = translator.model().config();
  std::vector<int> limits, forced;
  for (const std::string& sentence : sentences) {
    auto ids = translator.tokenizer().encode(sentence);
    if (!ids.ok()) return ids.status();
    const int64_t tokens = static_cast<int64_t>(ids->size() + languages.source_prefix.size());
    limits.push_back(options.max_output_tokens(tokens, config.max_positions,
                                               config.end_forced_at_limit));
    forced.push_back(static_cast<int>(options.forced_start_tokens.size() +
                                      languages.forced_target.size()));
  }
  TermTokenRules rules;
  rules.unk_id = config.unk_id;
  rules.no_repeat_ngram_size = options.no_repeat_ngram_size;
  return find_terms(glossary, ignore_case, sentences, translator.tokenizer(), limits, forced,
                    rules);
}

}  // namespace xlate
