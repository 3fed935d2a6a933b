// The language tokens of a multilingual model (Tokenizer::language_style): OPUS-MT's
// multilingual Marian models start the source with the target language's token (">>deu<< A dog
// runs.", as MarianTokenizer cuts it); M2M100 and NLLB-200 start it with the source language's
// ("__en__", "eng_Latn") and force the target language's as the first output token.
// Requests name languages in BCP-47; the models' tokens use ISO 639-1 or 639-3 codes, with a
// script where it matters (">>zho_Hant<<", "deu_Latn").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/tokenizer.h"

namespace xlate {

struct LanguageTokens {
  std::vector<int32_t> source_prefix;  // put before each sentence's pieces
  std::vector<int32_t> forced_target;  // TranslationOptions::forced_start_tokens
};

// The model's token for `bcp47` (e.g. "de", "de-CH", "zh-Hant"): the first of its tokens for
// <ISO 639-3>_<Script>, <ISO 639-1>_<Script>, <ISO 639-3>, <ISO 639-1>, where Script is the
// tag's or, when it names none, the language's likely script (ICU: "de" -> Latn). -1 when the
// model has no language tokens. InvalidArgument naming `field` and the codes the model knows
// when `bcp47` is empty, not a language code, or none of its tokens.
absl::StatusOr<int> language_token(const Tokenizer& tokenizer, const std::string& bcp47,
                                   absl::string_view field);

// The tokens that choose a request's languages; nothing for a model of one language pair.
// Errors name the fields as given (a request's, or the CLI's flags).
absl::StatusOr<LanguageTokens> language_tokens(
    const Tokenizer& tokenizer, const std::string& source_bcp47, const std::string& target_bcp47,
    absl::string_view source_field = "source_language_code",
    absl::string_view target_field = "target_language_code");

// The tokens a model reads of `sentence` with `languages`: its source prefix, its pieces and
// the end token (what --max_input_tokens bounds); 0 for text the tokenizer refuses (whose own
// error comes when it is translated).
int64_t source_token_count(const Tokenizer& tokenizer, const LanguageTokens& languages,
                           absl::string_view sentence);

}  // namespace xlate
