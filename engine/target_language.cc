#include "engine/target_language.h"

#include <unicode/locid.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "text/utf8.h"

namespace xlate {

absl::StatusOr<int> language_token(const Tokenizer& tokenizer, const std::string& bcp47,
                                   absl::string_view field) {
  const std::vector<std::string> known = tokenizer.languages();
  if (known.empty()) return -1;
  if (bcp47.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "this model is multilingual: name a language in ", field, " (it knows ",
        absl::StrJoin(known, ", "), ")"));
  }
  UErrorCode error = U_ZERO_ERROR;
  const icu::Locale locale = icu::Locale::forLanguageTag(bcp47, error);
  if (U_FAILURE(error) || locale.isBogus() || locale.getLanguage()[0] == '\0') {
    return absl::InvalidArgumentError(absl::StrCat(field, " \"", excerpt(bcp47),
                                                   "\" is not a BCP-47 language code"));
  }
  const std::string language = locale.getLanguage(), iso3 = locale.getISO3Language();
  std::string script = locale.getScript();
  if (script.empty()) {
    icu::Locale likely(locale);
    UErrorCode likely_error = U_ZERO_ERROR;
    likely.addLikelySubtags(likely_error);
    if (U_SUCCESS(likely_error)) script = likely.getScript();
  }
  std::vector<std::string> candidates;
  if (!script.empty()) {
    if (!iso3.empty()) candidates.push_back(iso3 + "_" + script);
    candidates.push_back(language + "_" + script);
  }
  if (!iso3.empty()) candidates.push_back(iso3);
  candidates.push_back(language);
  for (const std::string& code : candidates) {
    if (const int token = tokenizer.language_token(code); token >= 0) return token;
  }
  return absl::InvalidArgumentError(absl::StrCat(field, " \"", excerpt(bcp47),
                                                 "\" is not one of this model's languages: ",
                                                 absl::StrJoin(known, ", ")));
}

absl::StatusOr<LanguageTokens> language_tokens(const Tokenizer& tokenizer,
                                               const std::string& source_bcp47,
                                               const std::string& target_bcp47,
                                               absl::string_view source_field,
                                               absl::string_view target_field) {
  LanguageTokens tokens;
  const LanguageTokenStyle style = tokenizer.language_style();
  if (style == LanguageTokenStyle::kNone) return tokens;
  auto target = language_token(tokenizer, target_bcp47, target_field);
  if (!target.ok()) return target.status();
  if (style == LanguageTokenStyle::kTargetBeforeSource) {
    tokens.source_prefix.push_back(*target);
    return tokens;
  }
  auto source = language_token(tokenizer, source_bcp47, source_field);
  if (!source.ok()) return source.status();
  tokens.source_prefix.push_back(*source);
  tokens.forced_target.push_back(*target);
  return tokens;
}

int64_t source_token_count(const Tokenizer& tokenizer, const LanguageTokens& languages,
                           absl::string_view sentence) {
  auto ids = tokenizer.encode(std::string(sentence));
  if (!ids.ok()) return 0;
  return static_cast<int64_t>(languages.source_prefix.size() + ids->size()) + 1;
}

}  // namespace xlate
