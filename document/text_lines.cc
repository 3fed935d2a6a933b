#include "document/text_lines.h"

#include <stdexcept>

namespace xlate {

TextLines::TextLines(const std::string& source) {
  size_t start = 0;
  while (start < source.size()) {
    size_t end = source.find('\n', start);
    const bool last = end == std::string::npos;
    if (last) end = source.size();
    const bool crlf = !last && end > start && source[end - 1] == '\r';
    lines_.push_back(source.substr(start, end - start - (crlf ? 1 : 0)));
    endings_.push_back(last ? "" : crlf ? "\r\n" : "\n");
    start = end + 1;
  }
}

std::string TextLines::Rebuild(const std::vector<std::string>& translations,
                               const std::vector<WordLinks>& /*links*/) const {
  if (translations.size() != lines_.size()) {
    throw std::logic_error("TextLines::Rebuild: one translation per line");
  }
  std::string out;
  for (size_t i = 0; i < lines_.size(); ++i) out += translations[i] + endings_[i];
  return out;
}

}  // namespace xlate
