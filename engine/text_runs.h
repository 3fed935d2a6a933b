// A document whose runs of text a translation replaces, every other byte kept as it came: text
// with placeholders (engine/placeholder_text.h) or an HTML document (engine/html_text.h). A
// caller translates texts() as plain text, each run on its own, and Rebuild()s the document.
#pragma once

#include <string>
#include <vector>

namespace xlate {

class TextRuns {
 public:
  virtual ~TextRuns() = default;
  // The runs to translate, in document order.
  virtual const std::vector<std::string>& texts() const = 0;
  // The document with run i replaced by translations[i]; as many translations as texts().
  virtual std::string Rebuild(const std::vector<std::string>& translations) const = 0;
};

}  // namespace xlate
