#include "server/language_detection.h"

#include <cld2/public/compact_lang_det.h>
#include <cld2/public/encodings.h>

namespace xlate::server {

std::vector<LanguageCandidate> detect_language(absl::string_view text) {
  CLD2::Language languages[3];
  int percents[3] = {0, 0, 0};
  double normalized_scores[3];
  int text_bytes = 0;
  bool reliable = false;
  int valid_prefix_bytes = 0;
  // Plain text (no HTML tags to skip); no hints: the answer comes from the text alone.
  const CLD2::CLDHints hints = {nullptr, nullptr, CLD2::UNKNOWN_ENCODING,
                                CLD2::UNKNOWN_LANGUAGE};
  CLD2::ExtDetectLanguageSummaryCheckUTF8(text.data(), static_cast<int>(text.size()),
                                          /*is_plain_text=*/true, &hints, /*flags=*/0, languages,
                                          percents, normalized_scores,
                                          /*resultchunkvector=*/nullptr, &text_bytes, &reliable,
                                          &valid_prefix_bytes);
  std::vector<LanguageCandidate> candidates;
  for (int i = 0; i < 3; ++i) {
    if (languages[i] == CLD2::UNKNOWN_LANGUAGE || percents[i] <= 0) continue;
    LanguageCandidate candidate;
    // CLD2's codes are ISO 639-1 where one exists, else BCP-47-shaped ("zh-Hant", "haw").
    candidate.language_code = CLD2::LanguageCode(languages[i]);
    candidate.confidence = static_cast<float>(percents[i]) / 100.f;
    candidate.reliable = reliable;
    candidates.push_back(std::move(candidate));
  }
  if (candidates.empty()) candidates.push_back(LanguageCandidate{"und", 0.f, false});
  return candidates;
}

}  // namespace xlate::server
