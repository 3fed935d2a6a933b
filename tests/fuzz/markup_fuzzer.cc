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
#include "document/word_links.h"
#include "document/xml_text.h"

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
  std::vector<std::string> translations;
  std::vector<xlate::WordLinks> links;
  for (const std::string& text : document->texts()) {
    const std::vector<xlate::ByteRange> words = xlate::words_of(text);
    std::string reversed;
    for (size_t i = words.size(); i-- > 0;) {
      reversed += text.substr(words[i].begin, words[i].end - words[i].begin);
      if (i > 0) reversed += ' ';
    }
    xlate::WordLinks link;
    link.source_words = words;
    link.target_words = xlate::words_of(reversed);
    const int n = static_cast<int>(std::min(words.size(), link.target_words.size()));
    for (int i = 0; i < n; ++i) link.links.emplace_back(i, n - 1 - i);
    std::sort(link.links.begin(), link.links.end());
    translations.push_back(std::move(reversed));
    links.push_back(std::move(link));
  }
  if (!document->needs_word_links()) links.clear();
  const std::string rebuilt = document->Rebuild(translations, links);
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
