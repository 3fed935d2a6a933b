#pragma once

#include <cstddef>
#include <string_view>

namespace xlate {

// Whether `text` is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
// On failure, *error_offset is the byte offset of the first bad sequence.
bool is_valid_utf8(std::string_view text, size_t* error_offset);

}  // namespace xlate
