#include "document/break_boundaries.h"

#include <unicode/utext.h>

#include "absl/strings/str_cat.h"

namespace xlate {

absl::StatusOr<std::vector<size_t>> break_boundaries(std::string_view text,
                                                     icu::BreakIterator& breaks) {
  UErrorCode error = U_ZERO_ERROR;
  UText utext = UTEXT_INITIALIZER;
  utext_openUTF8(&utext, text.data(), static_cast<int64_t>(text.size()), &error);
  breaks.setText(&utext, error);
  std::vector<size_t> boundaries;
  if (U_SUCCESS(error)) {
    for (int32_t end = breaks.next(); end != icu::BreakIterator::DONE; end = breaks.next()) {
      boundaries.push_back(static_cast<size_t>(end));
    }
  }
  utext_close(&utext);
  if (U_FAILURE(error)) {
    return absl::InternalError(absl::StrCat("ICU cannot split the text: ", u_errorName(error)));
  }
  if (boundaries.empty() || boundaries.back() != text.size()) boundaries.push_back(text.size());
  return boundaries;
}

}  // namespace xlate
