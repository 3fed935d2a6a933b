#include "document/text_lines.h"

#include <stdexcept>

namespace xlate {

std::vector<LineSpan> line_spans(const std::string& text) {
  std::vector<LineSpan> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    const bool last = end == std::string::npos;
    if (last) end = text.size();
    const bool crlf = !last && end > start && text[end - 1] == '\r';
    lines.push_back({start, end - (crlf ? 1 : 0), last ? "" : crlf ? "\r\n" : "\n"});
    start = end + 1;
  }
  return lines;
}

TextLines::TextLines(const std::string& source) {
  for (LineSpan& line : line_spans(source)) {
    lines_.push_back(source.substr(line.begin, line.end - line.begin));
    endings_.push_back(std::move(line.ending));
  }
}

std::string TextLines::Rebuild(const std::vector<std::string>& translations,
                               const std::vector<WordLinks>& links) const {
  CheckRebuild("TextLines", translations, links);
  std::string out;
  for (size_t i = 0; i < lines_.size(); ++i) out += translations[i] + endings_[i];
  return out;
}

}  // namespace xlate
