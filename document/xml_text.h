// The text of an XML document that a translation replaces: mime_type "text/xml". Parsed by
// libxml2 (well-formedness checked: a malformed document is INVALID_ARGUMENT naming its line and
// column and libxml2's reason; no DTD loading, no network, no entity expansion), and written back
// by libxml2: the element structure, attributes, comments, processing instructions, CDATA
// sections and entity references are kept, and so is the white space at either end of an
// element's content. What the serialiser normalises is the markup's own spelling (attribute
// quotes, whitespace inside tags, character references in text, which come back as the
// characters), never what it means.
//
// XML names no inline elements, so the content decides: an element with words in a text node of
// its own (mixed content, as <para>Press <b>Save</b> now.</para>) is a block, translated whole
// (white space collapsed), and every element inside it is inline: put back, a copy with its
// attributes, around the target words linked to its words (document/inline_markup.h), as HTML's
// inline elements are. Comments, CDATA sections, processing instructions and entity references
// inside a block keep their place before the translation of the word that followed them. An
// element without words of its own is walked into. Not translated: CDATA sections, attribute
// values, and anything inside an element with translate="no" or its:translate="no" (W3C ITS);
// inside a block, such an element's text is part of the sentence and its content comes back
// in place of its text in the translation.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "document/text_runs.h"

namespace xlate {

class XmlText : public TextRuns {
 public:
  // keep_placeholders: the placeholders of the text (document/placeholder_text.h) are taken out of
  // it and put back as the inline elements are.
  static absl::StatusOr<XmlText> Parse(std::string source, bool keep_placeholders = false);

  // Each block's text: white space collapsed, none at either end.
  const std::vector<std::string>& texts() const override { return texts_; }
  bool needs_word_links() const override { return needs_word_links_; }

  // The document with text i replaced by translations[i] (escaped by the serialiser); the XML
  // declaration only when the source had one; links[i] (when needs_word_links()) place block
  // i's inline elements.
  std::string Rebuild(const std::vector<std::string>& translations,
                      const std::vector<WordLinks>& links) const override;

 private:
  std::string source_;
  std::vector<std::string> texts_;
  bool needs_word_links_ = false, keep_placeholders_ = false;
};

}  // namespace xlate
