// The text of an HTML document or fragment that a translation replaces, and the document rebuilt
// around the translations: mime_type "text/html". Parsed by Gumbo (Debian's libgumbo, an HTML5
// parser), so that a document is read as a browser reads it, malformed markup included; the
// rebuild replaces the bytes of each block of text in the source and leaves every other byte as
// it was sent (tags outside the blocks, attributes, comments, whitespace around the blocks).
//
// A block is the text of a paragraph: text nodes and inline elements (b, i, em, strong, a, span,
// code, sub, sup, ... and img) up to the next element of any other kind (p, div, li, td, br,
// h1, ...), a comment, or the parent's end. It is translated whole, as text (its white space
// collapsed as a browser shows it), and its inline elements are put back around the translated
// words aligned to the words they enclosed (document/inline_markup.h), their tags byte for byte;
// an inline element whose end tag is missing keeps it missing, over the rest of its block, so
// that a browser repairs the output as it repaired the source. Not translated: script,
// style, noscript, template, textarea, pre, and code, kbd, samp and var contents, and anything
// inside an element with translate="no" (HTML's attribute) or class "notranslate"; an inline
// one of these keeps its content byte for byte in place of the words its text was translated
// to. Comments and attribute values are not translated either.
//
// Markup that the parser had to rearrange (misnested inline tags, tags it reopened in the next
// paragraph) cannot be put back in source order: such a block's text nodes are translated
// each on its own instead, and every tag stays where it was.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "document/inline_markup.h"
#include "document/text_runs.h"

namespace xlate {

class HtmlText : public TextRuns {
 public:
  // Bounds on what one text may cost to parse: start tags (the parser's time grows with the
  // square of the nesting they allow), the parse tree's memory (HTML's repair of unclosed
  // formatting elements multiplies it), and the depth of the elements (the walk recurses).
  static constexpr size_t kMaxStartTags = 20000;
  static constexpr size_t kTreeBytesPerSourceByte = 64;
  static constexpr size_t kTreeBytesBase = size_t{16} << 20;
  static constexpr int kMaxDepth = 256;

  // INVALID_ARGUMENT when `source` is over 2^31 bytes (Gumbo's offsets) or over one of the
  // bounds above, each named; any other text parses, as HTML5 defines for every input.
  // keep_placeholders: the placeholders of the text
  // (document/placeholder_text.h) are taken out of it and put back as the inline elements are.
  static absl::StatusOr<HtmlText> Parse(std::string source, bool keep_placeholders = false);

  // Each block's text: entities decoded, white space collapsed, none at either end.
  const std::vector<std::string>& texts() const override { return texts_; }
  // Whether a block has inline elements (whose placement needs word links).
  bool needs_word_links() const override;

  // The source with block i replaced by translations[i], escaped for HTML text (&, <, >), its
  // inline elements placed by links[i] (empty without needs_word_links()).
  std::string Rebuild(const std::vector<std::string>& translations,
                      const std::vector<WordLinks>& links) const override;

 private:
  friend class HtmlBlocks;
  struct Block {
    ByteRange region;                     // the source bytes the rebuilt block replaces
    std::vector<InlineElement> elements;  // spans in the block's text
  };
  std::string source_;
  std::vector<std::string> texts_;
  std::vector<Block> blocks_;
};

}  // namespace xlate
