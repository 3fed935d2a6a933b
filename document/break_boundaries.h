// Where an ICU BreakIterator (sentences, words) breaks UTF-8 text, as the text's own byte
// offsets (through UText: no UTF-16 copy).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include <unicode/brkiter.h>

#include "absl/status/statusor.h"

namespace xlate {

// The boundaries after the text's start, in order, the last one text.size().
absl::StatusOr<std::vector<size_t>> break_boundaries(std::string_view text,
                                                     icu::BreakIterator& breaks);

}  // namespace xlate
