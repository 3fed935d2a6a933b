#include "engine/target_language.h"

#include <unicode/locid.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/utf8.h"

namespace xlate {

absl::StatusOr<int> target_language_token(const Tokenizer& tokenizer, const std::string& bcp47,
                                          absl::string_view field) {
  const std::vector<std::string> known = tokenizer.target_languages();
  if (known.empty()) return -1;
  const std::string listed = absl::StrJoin(known, ", ");
  if (bcp47.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "this model translates into several languages: name one in ", field, " (it knows ",
        listed, ")"));
  }
  UErrorCode error = U_ZERO_ERROR;
  const icu::Locale locale = icu::Locale::forLanguageTag(bcp47, error);
  if (U_FAILURE(error) || locale.isBogus() || locale.getLanguage()[0] == '\0') {
    return absl::InvalidArgumentError(absl::StrCat(field, " \"", excerpt(bcp47),
                                                   "\" is not a BCP-47 language code"));
  }
  const std::string language = locale.getLanguage(), iso3 = locale.getISO3Language(),
                    script = locale.getScript();
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
                                                 "\" is not one of this model's target "
                                                 "languages: ", listed));
}

}  // namespace xlate
