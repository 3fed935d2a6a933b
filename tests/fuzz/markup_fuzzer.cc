// Documents from a stranger through the markup and placeholder rebuilds (document/html_text.h,
// document/xml_text.h, document/placeholder_text.h, document/inline_markup.h): the first byte picks
// HTML, XML or plain text, with or without placeholders; every text is "translated" with its
// words in reverse order and linked word to word, the hardest order for nesting. Nothing
// throws or crashes; a rebuilt XML document is well-formed XML again; a plain text keeps every
// placeholder it was found to have.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "document/html_text.h"
#include "document/placeholder_text.h"
#include "document/xml_text.h"
#include "tests/fuzz/reversed_translation.h"

namespace {

size_t occurrences(const std::string& text, const std::string& part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int kind = data[0] % 3;
  const bool placeholders = (data[0] / 3) % 2 == 1;
  std::string source(reinterpret_cast<const char*>(data + 1), size - 1);
  std::unique_ptr<xlate::TextRuns> document;
  if (kind == 0) {
    auto html = xlate::HtmlText::Parse(source, placeholders);
    // Every text is HTML; one past a bound on its cost (start tags, tree memory, depth) is
    // refused, by name.
    if (!html.ok()) {
      if (html.status().code() != absl::StatusCode::kInvalidArgument) __builtin_trap();
      return 0;
    }
    document = std::make_unique<xlate::HtmlText>(*std::move(html));
  } else if (kind == 1) {
    auto xml = xlate::XmlText::Parse(source, placeholders);
    if (!xml.ok()) return 0;  // malformed XML is refused, by name
    document = std::make_unique<xlate::XmlText>(*std::move(xml));
  } else {
    document = std::make_unique<xlate::PlaceholderText>(source);
  }
  const std::string rebuilt = xlate::fuzz::rebuild_reversed(*document);
  if (kind == 1 && !xlate::XmlText::Parse(rebuilt).ok()) __builtin_trap();
  if (kind == 2) {
    // Each placeholder is written verbatim once: at least as many occurrences as it was found.
    const std::vector<std::string>& found =
        static_cast<const xlate::PlaceholderText&>(*document).placeholders();
    for (const std::string& placeholder : found) {
      const size_t times = static_cast<size_t>(std::count(found.begin(), found.end(), placeholder));
      if (occurrences(rebuilt, placeholder) < times) __builtin_trap();
    }
  }
  return 0;
}
