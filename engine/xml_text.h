// The text of an XML document that a translation replaces: mime_type "text/xml". Parsed by
// libxml2 (well-formedness checked: a malformed document is INVALID_ARGUMENT naming its line and
// column and libxml2's reason; no DTD loading, no network, no entity expansion), and written back
// by libxml2 with each text node's words replaced: the element structure, attributes, comments,
// processing instructions, CDATA sections and entity references are kept, and so is every text
// node's leading and trailing whitespace. What the serialiser normalises is the markup's own
// spelling (attribute quotes, whitespace inside tags, character references in text, which
// come back as the characters), never what it means.
//
// Translated: text nodes, each on its own (inline elements split a sentence into runs, as in
// HTML). Not translated: CDATA sections, attribute values, and anything inside an element with
// translate="no" or its:translate="no" (W3C ITS).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/text_runs.h"

namespace xlate {

class XmlText : public TextRuns {
 public:
  static absl::StatusOr<XmlText> Parse(std::string source);

  // Each translatable text node's text, without its leading and trailing whitespace.
  const std::vector<std::string>& texts() const override { return texts_; }

  // The document with text i replaced by translations[i] (escaped by the serialiser); the XML
  // declaration only when the source had one. Links are not used (no inline markup is moved).
  std::string Rebuild(const std::vector<std::string>& translations,
                      const std::vector<WordLinks>& links) const override;

 private:
  std::string source_;
  std::vector<std::string> texts_;
};

}  // namespace xlate
