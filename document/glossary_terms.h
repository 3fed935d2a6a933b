// A request's glossary over its sentences: the terms each sentence holds and the lexical
// constraints (their targets' tokens) its translation is searched under.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/decoding/device_beam_search.h"
#include "document/glossary.h"
#include "engine/tokenizer.h"
#include "engine/translator.h"

namespace xlate {

struct TermUse {
  std::string source;  // as the sentence has it
  std::string target;
  bool constrained = false;  // its target is one of the sentence's constraints
  std::string note;          // why not, when not
};

struct SentenceTerms {
  Constraints constraints;  // distinct targets, in the order found
  std::vector<TermUse> uses;
};

// What a target's tokens must be for the search to force them whole; a target that is not is
// refused by name (forced, it would damage the sentence or never end it).
struct TermTokenRules {
  int unk_id = -1;               // the model's <unk>: a target the vocabulary cannot spell
  int no_repeat_ngram_size = 0;  // the options' guard, which forbids a target repeating n-grams
};

// Per sentence: its glossary terms (Glossary::Find) and their targets as target-side token
// ids, the first that fit: at most rules::kMaxConstraints distinct targets of
// rules::kMaxConstraintTokens tokens in all, all of them shorter than output_limits[s] (the
// sentence's output tokens, the end token included) less forced_tokens[s]. A term left out
// gets a note saying which limit it passed. INVALID_ARGUMENT when a found target breaks
// `rules`.
absl::StatusOr<std::vector<SentenceTerms>> find_terms(const Glossary& glossary, bool ignore_case,
                                                      const std::vector<std::string>& sentences,
                                                      const Tokenizer& tokenizer,
                                                      const std::vector<int>& output_limits,
                                                      const std::vector<int>& forced_tokens,
                                                      const TermTokenRules& rules);

// find_terms for sentences a Translator translates with `options` and `languages`: their
// output limits from their token counts.
absl::StatusOr<std::vector<SentenceTerms>> glossary_constraints(
    const Glossary& glossary, bool ignore_case, const std::vector<std::string>& sentences,
    const Translator& translator, const TranslationOptions& options,
    const LanguageTokens& languages);

}  // namespace xlate
