// A Markdown document (CommonMark) whose text a translation replaces, read and written back by
// cmark (Debian's libcmark-dev, CommonMark's reference implementation). Each paragraph and
// heading is one text, translated whole; its emphasis, strong emphasis and links go back around
// the target words aligned to the words they held (document/inline_markup.h), and its inline
// code, images, raw HTML and hard line breaks stay in place, untranslated (code in place of the
// words its text was translated to). Code blocks, HTML blocks and thematic breaks are not
// translated. The document is rendered back to CommonMark by cmark: the same document, in
// cmark's own spelling of its markup (list markers, emphasis characters, escapes), lines not
// re-wrapped.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "document/text_runs.h"

namespace xlate {

class MarkdownText : public TextRuns {
 public:
  // Every text is CommonMark (the grammar has no errors); INVALID_ARGUMENT for one over
  // kMaxBytes, whose parse would take the memory of a much larger one, or nested deeper than
  // kMaxDepth (blocks and inlines: the rebuild walks them).
  static constexpr size_t kMaxBytes = size_t{16} << 20;
  static constexpr int kMaxDepth = 256;
  static absl::StatusOr<MarkdownText> Parse(std::string source);

  const std::vector<std::string>& texts() const override { return texts_; }
  bool needs_word_links() const override { return needs_word_links_; }
  std::string Rebuild(const std::vector<std::string>& translations,
                      const std::vector<WordLinks>& links) const override;

 private:
  std::string source_;
  std::vector<std::string> texts_;
  bool needs_word_links_ = false;
};

}  // namespace xlate
