// A document whose runs of text a translation replaces, every other byte kept as it came: text
// with placeholders (document/placeholder_text.h), an HTML or XML document (document/html_text.h,
// document/xml_text.h). A caller translates texts() as plain text, each run on its own, and
// Rebuild()s the document; when needs_word_links(), with the word links of each run and its
// translation (document/word_links.h: from the translations' alignments), which place the run's
// inline markup.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "document/word_links.h"

namespace xlate {

class TextRuns {
 public:
  virtual ~TextRuns() = default;
  // The runs to translate, in document order.
  virtual const std::vector<std::string>& texts() const = 0;
  // Whether Rebuild needs word links.
  virtual bool needs_word_links() const { return false; }
  // The document with run i replaced by translations[i]; as many translations as texts(), and as
  // many links when needs_word_links() (else none: links is empty).
  virtual std::string Rebuild(const std::vector<std::string>& translations,
                              const std::vector<WordLinks>& links) const = 0;

 protected:
  // Rebuild's arguments as its callers must give them; else std::logic_error naming `kind`
  // (a programming error, not the user's).
  void CheckRebuild(const char* kind, const std::vector<std::string>& translations,
                    const std::vector<WordLinks>& links) const {
    const size_t count = texts().size();
    if (translations.size() != count || (needs_word_links() && links.size() != count)) {
      throw std::logic_error(std::string(kind) +
                             "::Rebuild: one translation (and word links) per text");
    }
  }
};

}  // namespace xlate
