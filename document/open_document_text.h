// An OpenDocument file (.odt text, .odp presentation, .ods spreadsheet: a ZIP archive of XML
// parts, as LibreOffice writes them) whose paragraphs a translation replaces. Each paragraph or
// heading (text:p, text:h) of content.xml, and of the page headers and footers in styles.xml,
// is one text, its white space collapsed as ODF displays it, translated whole; its spans
// (text:span: a style) and links (text:a) go back around the target words aligned to the words
// they held (document/inline_markup.h). Cells, slides, lists, tables and text boxes hold
// paragraphs like any other.
//
// Kept as they are, in place of no words: spaces, tabs and line breaks (text:s, text:tab,
// text:line-break, which stand for a space between words), fields (page numbers, dates ...),
// bookmarks, notes and comments (whose own paragraphs are translated as paragraphs of their
// own), frames and drawings (a text box's paragraphs likewise). A paragraph with no words is
// not touched.
//
// Every other entry of the archive (the uncompressed `mimetype` first, the manifest, meta.xml,
// settings, images, the styles' definitions) comes back byte for byte
// (document/zip_archive.h); a translated part is written by libxml2 (document/xml_tree.h).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "document/text_runs.h"
#include "document/zip_archive.h"

namespace xlate {

class OpenDocumentText : public TextRuns {
 public:
  // INVALID_ARGUMENT when `archive` is not a ZIP archive, has no content.xml, or has a part that
  // is damaged, over ZipArchive's limits or not well-formed XML (named).
  static absl::StatusOr<OpenDocumentText> Parse(std::string archive);

  const std::vector<std::string>& texts() const override { return texts_; }
  bool needs_word_links() const override { return !texts_.empty(); }
  // The archive with paragraph i's text replaced by translations[i], its spans and links placed
  // by links[i]. Throws std::runtime_error when libzip cannot write the archive (memory).
  std::string Rebuild(const std::vector<std::string>& translations,
                      const std::vector<WordLinks>& links) const override;

  // The parts whose paragraphs are translated: content.xml, then styles.xml when its page
  // headers or footers hold words.
  const std::vector<std::string>& parts() const { return parts_; }

 private:
  explicit OpenDocumentText(ZipArchive archive) : archive_(std::move(archive)) {}
  ZipArchive archive_;
  std::vector<std::string> parts_;
  std::vector<std::string> texts_;
};

}  // namespace xlate
