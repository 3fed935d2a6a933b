#include "server/source_detection.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace xlate::server {

void fill_detected(const LanguageCandidate& candidate, xlate::v1::DetectedLanguage& detected) {
  detected.set_language_code(candidate.language_code);
  detected.set_confidence(candidate.confidence);
  detected.set_reliable(candidate.reliable);
}

grpc::Status detect_source(xlate::v1::TranslateRequest& request,
                           xlate::v1::DetectedLanguage& detected) {
  std::string joined;
  int first_reliable = -1;
  std::string reliable_code;
  for (int i = 0; i < request.contents_size(); ++i) {
    const std::string& text = request.contents(i);
    const LanguageCandidate best = detect_language(text).front();
    if (best.reliable) {
      if (first_reliable < 0) {
        first_reliable = i, reliable_code = best.language_code;
      } else if (best.language_code != reliable_code) {
        return grpc::Status(
            grpc::INVALID_ARGUMENT,
            absl::StrCat("source_language_code \"auto\": contents[", first_reliable, "] reads as ",
                         reliable_code, " and contents[", i, "] as ", best.language_code,
                         "; send each language in a request of its own, or "
                         "name source_language_code"));
      }
    }
    absl::StrAppend(&joined, text, "\n");
  }
  const LanguageCandidate best = detect_language(joined).front();
  if (best.language_code == "und") {
    return grpc::Status(grpc::INVALID_ARGUMENT,
                        "source_language_code \"auto\": no language could be "
                        "told from the text; "
                        "name source_language_code");
  }
  fill_detected(best, detected);
  request.set_source_language_code(best.language_code);
  return grpc::Status::OK;
}

}  // namespace xlate::server
