// Text from a stranger through the UTF-8 decoder and the sentence segmentation: invalid UTF-8
// is refused, valid text is cut into pieces that give the text back exactly, and no sentence
// starts or ends with a blank code point.
#include <cstdint>
#include <string>
#include <vector>

#include "document/text_segments.h"
#include "text/utf8.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  size_t offset = 0;
  const bool valid = xlate::is_valid_utf8(text, &offset);
  auto split = xlate::SegmentedTexts::Split({text}, "en", xlate::Segmentation::kSentences);
  if (split.ok() != valid) __builtin_trap();
  if (!valid) return 0;
  int64_t decoded = 0;
  for (size_t at = 0; at < text.size(); ++decoded) {
    char32_t c = 0;
    if (!xlate::decode_utf8(text, &at, &c)) __builtin_trap();
  }
  if (decoded != xlate::count_code_points(text)) __builtin_trap();
  const std::vector<std::string>& sentences = split->sentences();
  if (split->Join(0, sentences) != text) __builtin_trap();
  for (const std::string& sentence : sentences) {
    size_t at = 0;
    char32_t first = 0;
    if (sentence.empty() || !xlate::decode_utf8(sentence, &at, &first) ||
        xlate::is_blank_code_point(first)) {
      __builtin_trap();
    }
  }
  return 0;
}
