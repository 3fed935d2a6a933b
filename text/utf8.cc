#include "text/utf8.h"

namespace xlate {

bool decode_utf8(std::string_view text, size_t* pos, char32_t* code_point) {
  const size_t start = *pos;
  if (start >= text.size()) return false;
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[start + k]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) {
    *code_point = lead;
    *pos = start + 1;
    return true;
  }
  size_t length;
  char32_t value;
  char32_t min_value;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, value = lead & 0x1F, min_value = 0x80;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, value = lead & 0x0F, min_value = 0x800;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, value = lead & 0x07, min_value = 0x10000;
  } else {
    return false;  // a continuation byte, an overlong 2-byte lead, or past U+10FFFF
  }
  if (text.size() - start < length) return false;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(k) & 0xC0) != 0x80) return false;
    value = (value << 6) | (byte(k) & 0x3F);
  }
  if (value < min_value || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return false;
  *code_point = value;
  *pos = start + length;
  return true;
}

void append_utf8(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

bool is_valid_utf8(std::string_view text, size_t* error_offset) {
  size_t pos = 0;
  char32_t code_point;
  while (pos < text.size()) {
    if (!decode_utf8(text, &pos, &code_point)) {
      *error_offset = pos;
      return false;
    }
  }
  return true;
}

std::string excerpt(std::string_view text, size_t max_code_points) {
  size_t pos = 0, kept_bytes = 0, code_points = 0;
  char32_t code_point;
  bool malformed = false;
  while (pos < text.size()) {
    if (!decode_utf8(text, &pos, &code_point)) {
      malformed = true;
      break;
    }
    if (++code_points == max_code_points) kept_bytes = pos;
  }
  if (!malformed && code_points <= max_code_points) return std::string(text);
  if (code_points < max_code_points) kept_bytes = pos;  // malformed before the cut
  std::string result(text.substr(0, kept_bytes));
  result += "...";
  if (!malformed) result += " (" + std::to_string(code_points) + " code points)";
  return result;
}

}  // namespace xlate
