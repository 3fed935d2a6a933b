// Language detection of request text with CLD2 (Debian's libcld2): the candidates of DetectLanguage
// and of a TranslateRequest whose source_language_code is "auto". CLD2 scores the text's
// letters by quadgrams and reports the share of them in each of its top three languages and
// whether it judged the text long and clear enough to tell (`reliable`); both are passed on as
// they are, so that a guess from three words is never presented as fact.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace xlate::server {

struct LanguageCandidate {
  std::string language_code;  // BCP-47 ("en", "zh-Hant"); "und" when nothing could be told
  float confidence = 0;       // share of the text's letters in this language, [0, 1]
  bool reliable = false;      // CLD2's judgement of the whole detection
};

// The text's top candidates, best first (at most three, at least one: "und" with confidence 0
// when CLD2 knows none of its languages or the text has no letters). `text` must be valid UTF-8
// (the service checks requests before this).
std::vector<LanguageCandidate> detect_language(absl::string_view text);

}  // namespace xlate::server
