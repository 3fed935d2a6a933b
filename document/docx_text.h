// A Word document (.docx: Office Open XML WordprocessingML in a ZIP archive) whose paragraphs a
// translation replaces. Each paragraph (w:p) of the body (tables included), the headers and
// footers, footnotes, endnotes and comments is one text: the text of its runs (w:t) translated
// whole, as HTML's blocks are. Each run's formatting (its w:rPr: bold, italics, font, colour,
// size ...) goes back on the target words aligned to the run's words
// (document/inline_markup.h), and a hyperlink, tracked insertion or smart tag around the words
// of the runs it held.
//
// Kept as they are, in place of no words (put before the translation of the word they came
// before): tabs, breaks, drawings, footnote references, field characters and codes, bookmarks,
// comment ranges, proofing marks, simple fields, content controls (w:sdt) and deleted text; a
// text box's paragraphs (inside a drawing) are paragraphs of their own. A paragraph with no
// words is not touched.
//
// Every other entry of the archive (styles, numbering, images, relationships, settings,
// metadata) comes back byte for byte (document/zip_archive.h); a translated part is written by
// libxml2 (document/xml_tree.h) with its declaration, namespaces, attributes and every element
// outside the paragraphs' runs as they were.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "document/text_runs.h"
#include "document/zip_archive.h"

namespace xlate {

class DocxText : public TextRuns {
 public:
  // INVALID_ARGUMENT when `archive` is not a ZIP archive, has no word/document.xml, or a part
  // that is damaged, over ZipArchive's limits or not well-formed XML (named).
  static absl::StatusOr<DocxText> Parse(std::string archive);

  // Each paragraph's text, its runs' text joined as Word shows it.
  const std::vector<std::string>& texts() const override { return texts_; }
  bool needs_word_links() const override { return !texts_.empty(); }
  // The archive with paragraph i's text replaced by translations[i], its runs' formatting placed
  // by links[i]. Throws std::runtime_error when libzip cannot write the archive (memory).
  std::string Rebuild(const std::vector<std::string>& translations,
                      const std::vector<WordLinks>& links) const override;

  // The parts whose paragraphs are translated: word/document.xml first, then the headers,
  // footers, footnotes, endnotes and comments the archive has, in its order.
  const std::vector<std::string>& parts() const { return parts_; }

 private:
  explicit DocxText(ZipArchive archive) : archive_(std::move(archive)) {}
  ZipArchive archive_;
  std::vector<std::string> parts_;
  std::vector<std::string> texts_;
};

}  // namespace xlate
