// UTF-8 decoding and encoding, the one implementation of the project: the engine and server
// check their inputs with it, the BLEU scorer (evaluation/) walks text with it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace xlate {

// Decodes the code point that starts at text[*pos] and moves *pos past it. Returns false (and
// leaves *pos) on a malformed, truncated, overlong, surrogate or out-of-range (> U+10FFFF)
// sequence.
bool decode_utf8(std::string_view text, size_t* pos, char32_t* code_point);

// Appends the UTF-8 encoding of `code_point` (a valid scalar value) to *out.
void append_utf8(char32_t code_point, std::string* out);

// Whether `text` is well-formed UTF-8 (every sequence decodes). On failure, *error_offset is the
// byte offset of the first bad sequence.
bool is_valid_utf8(std::string_view text, size_t* error_offset);

// `text` for an error message that quotes what a user sent: whole when it has at most
// `max_code_points` code points, else its first `max_code_points` code points (cut between
// code points, never inside one) and "... (N code points)", so that an echoed field stays short
// (gRPC clients refuse metadata past 8-16 KB). A malformed sequence ends the excerpt there.
std::string excerpt(std::string_view text, size_t max_code_points = 40);

}  // namespace xlate
