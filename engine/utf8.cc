#include "engine/utf8.h"

#include <cstdint>

namespace xlate {

bool is_valid_utf8(std::string_view text, size_t* error_offset) {
  size_t i = 0;
  while (i < text.size()) {
    const uint8_t lead = static_cast<uint8_t>(text[i]);
    size_t length;
    uint32_t code_point, minimum;
    if (lead < 0x80) {
      ++i;
      continue;
    } else if ((lead & 0xe0) == 0xc0) {
      length = 2, code_point = lead & 0x1f, minimum = 0x80;
    } else if ((lead & 0xf0) == 0xe0) {
      length = 3, code_point = lead & 0x0f, minimum = 0x800;
    } else if ((lead & 0xf8) == 0xf0) {
      length = 4, code_point = lead & 0x07, minimum = 0x10000;
    } else {
      *error_offset = i;
      return false;
    }
    if (i + length > text.size()) {
      *error_offset = i;
      return false;
    }
    for (size_t k = 1; k < length; ++k) {
      const uint8_t continuation = static_cast<uint8_t>(text[i + k]);
      if ((continuation & 0xc0) != 0x80) {
        *error_offset = i;
        return false;
      }
      code_point = (code_point << 6) | (continuation & 0x3f);
    }
    if (code_point < minimum || code_point > 0x10ffff ||
        (code_point >= 0xd800 && code_point <= 0xdfff)) {
      *error_offset = i;
      return false;
    }
    i += length;
  }
  return true;
}

}  // namespace xlate
