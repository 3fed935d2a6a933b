// BCP-47 language codes of requests (Cloud Translation accepts "en", "EN", "en-US", "de-CH"):
// parsed by ICU, and a request's code matches a model's language when their language subtags
// are equal after ICU's normalisation (case; ISO 639-2 "deu" is "de"). Regions, scripts and
// variants do not choose between models here: each model serves one language per side.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace xlate::server {

// The normalised language subtag of `tag` ("en-US" -> "en", "DEU" -> "de"); INVALID_ARGUMENT
// naming `field` when `tag` is not a well-formed BCP-47 tag or has no language subtag.
absl::StatusOr<std::string> language_subtag(const std::string& field, const std::string& tag);

// OK when `requested` (a request's field; empty = any) names `served`, the model's language;
// INVALID_ARGUMENT naming the field, the code and the served language otherwise.
absl::Status check_language(const std::string& field, const std::string& requested,
                            const std::string& served, const char* direction);

}  // namespace xlate::server
