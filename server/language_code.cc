#include "server/language_code.h"

#include <unicode/locid.h>

#include "absl/strings/str_cat.h"
#include "text/utf8.h"

namespace xlate::server {

absl::StatusOr<std::string> language_subtag(const std::string& field, const std::string& tag) {
  UErrorCode error = U_ZERO_ERROR;
  const icu::Locale locale = icu::Locale::forLanguageTag(tag, error);
  if (U_FAILURE(error) || locale.isBogus() || locale.getLanguage()[0] == '\0') {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " \"", excerpt(tag), "\" is not a BCP-47 language code (e.g. \"en\", \"de-CH\")"));
  }
  return std::string(locale.getLanguage());
}

absl::Status check_language(const std::string& field, const std::string& requested,
                            const std::string& served, const char* direction) {
  if (requested.empty() || served.empty()) return absl::OkStatus();
  absl::StatusOr<std::string> language = language_subtag(field, requested);
  if (!language.ok()) return language.status();
  // A model directory's own code is trusted to parse; one that does not is compared as given.
  absl::StatusOr<std::string> served_language = language_subtag("the model's language", served);
  if (*language == (served_language.ok() ? *served_language : served)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(field, " \"", excerpt(requested),
                                                 "\" is not served; the model translates ",
                                                 direction, " \"", served, "\""));
}

}  // namespace xlate::server
