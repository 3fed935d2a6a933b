// A LibreTranslate request (POST /translate, /detect) read from its JSON or form body, within
// bounds that hold while it is read: a JSON body is read as a stream of events
// (nlohmann::json's SAX parser, which keeps no tree), so a 4 MiB body of 1.4 million empty
// arrays or a 100,000-deep one is refused at the first value past a bound, with no more memory
// than the texts it keeps. A Protobuf Struct parse of the same bodies held 250-310 MiB each and
// took a core for minutes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace xlate::server {

struct LibreRequest {
  std::vector<std::string> texts;  // q: one text, or a list's
  bool q_is_list = false;
  std::string source, target, format = "text", api_key;
  int alternatives = 0;
};

// Values nest at most this deep: the body's object (1), q's list (2), and one level of any field
// this server does not read (3).
inline constexpr int kMaxLibreJsonDepth = 3;

// The fields of a JSON body. INVALID_ARGUMENT with LibreTranslate's "Invalid request: ..."
// message when the body is not JSON, is not an object, nests deeper than kMaxLibreJsonDepth,
// or holds more than `max_texts` texts in q (--max_entries_per_request), or when a field is
// missing (q always; source and target `with_languages`) or of the wrong type.
absl::StatusOr<LibreRequest> read_libre_json(absl::string_view body, int64_t max_texts,
                                             bool with_languages);

// The fields of a form (URL-encoded or multipart: name and value pairs in order; a repeated q
// is a list), with the checks above.
absl::StatusOr<LibreRequest> read_libre_form(
    const std::vector<std::pair<absl::string_view, absl::string_view>>& pairs,
    int64_t max_texts, bool with_languages);

}  // namespace xlate::server
