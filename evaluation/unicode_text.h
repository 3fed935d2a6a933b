// UTF-8 text helpers that reproduce what Python 3's `str` does, so that BLEU computed here
// tokenises and lowercases exactly as sacreBLEU (which is Python) does:
//   - whitespace is Python's str.isspace() set (ASCII 9-13, 28-32, U+0085, U+00A0, U+1680,
//     U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000), as used by str.split()/rstrip();
//   - lowercasing is str.lower(): Unicode 14.0 simple lowercase mappings for every code point,
//     plus U+0130 (İ) -> "i" U+0307 and the Greek final sigma (Σ -> ς at the end of a word).
// Every function that takes text requires valid UTF-8 (check with `check_utf8` first).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "text/utf8.h"

namespace xlate::evaluation {

// Code points are decoded and encoded with xlate::decode_utf8 / append_utf8 (text/utf8.h).

// OK, or InvalidArgument "invalid UTF-8 at byte N" (N counted from 0).
absl::Status check_utf8(std::string_view text);

// Whether Python's str.isspace() is true for this code point.
bool is_python_whitespace(char32_t code_point);

// Python's text.split(): the maximal runs of non-whitespace, as views into `text`.
std::vector<std::string_view> split_whitespace(std::string_view text);

// The words joined by single spaces (Python's " ".join(words)).
std::string join_words(const std::vector<std::string_view>& words);

// Python's text.rstrip(): `text` without its trailing whitespace.
std::string_view rstrip_whitespace(std::string_view text);

// Python's text.lower(). The Final_Sigma context is approximated: "cased" means a letter of
// the Latin, Greek, Cyrillic or Armenian blocks, and the case-ignorable characters skipped
// around Σ are combining marks, apostrophes, period, colon, middle dot, soft hyphen and
// zero-width format characters (docs/bleu.md).
std::string lowercase(std::string_view text);

}  // namespace xlate::evaluation
