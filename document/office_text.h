// An Office Open XML file whose paragraphs a translation replaces: a Word document (.docx), a
// PowerPoint presentation (.pptx) or an Excel workbook (.xlsx), each a ZIP archive of XML parts.
// Each paragraph is one text, the text of its runs translated whole, as HTML's blocks are; each
// run's formatting (its rPr: bold, italics, font, colour, size, a .pptx run's hyperlink ...)
// goes back on the target words aligned to the run's words (document/inline_markup.h), and a
// .docx hyperlink, tracked insertion or smart tag around the words of the runs it held.
//
//   .docx  w:p of the body (tables included), headers, footers, footnotes, endnotes, comments;
//          a text box's paragraphs (inside a drawing) are paragraphs of their own
//   .pptx  a:p of every slide's shapes and tables, then of the speaker notes, in slide order
//   .xlsx  every shared string (xl/sharedStrings.xml, as Excel writes cells' text), then each
//          sheet's inline strings (as openpyxl writes it); formulas, numbers and sheet names
//          are not text to translate
//
// Kept as they are, in place of no words (put before the translation of the word they came
// before): tabs and breaks (which stand for a space between words), drawings, footnote
// references, fields, bookmarks, comment ranges, proofing marks, content controls (w:sdt) and
// deleted text. A paragraph with no words is not touched.
//
// Every other entry of the archive (styles, layouts, numbering, images, relationships,
// settings, metadata) comes back byte for byte (document/zip_archive.h); a translated part is
// written by libxml2 (document/xml_tree.h) with its declaration, namespaces, attributes and
// every element outside the paragraphs' runs as they were.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "document/text_runs.h"
#include "document/zip_archive.h"

namespace xlate {

enum class OfficeFormat { kDocx, kPptx, kXlsx };

class OfficeText : public TextRuns {
 public:
  // INVALID_ARGUMENT when `archive` is not a ZIP archive, lacks the format's main part
  // (word/document.xml, ppt/presentation.xml, xl/workbook.xml), or has a part that is damaged,
  // over ZipArchive's limits or not well-formed XML (named).
  static absl::StatusOr<OfficeText> Parse(std::string archive, OfficeFormat format);

  // Each paragraph's text, its runs' text joined as the application shows it (a tab or break
  // as a space).
  const std::vector<std::string>& texts() const override { return texts_; }
  bool needs_word_links() const override { return !texts_.empty(); }
  // The archive with paragraph i's text replaced by translations[i], its runs' formatting placed
  // by links[i]. Throws std::runtime_error when libzip cannot write the archive (memory).
  std::string Rebuild(const std::vector<std::string>& translations,
                      const std::vector<WordLinks>& links) const override;

  // The parts whose paragraphs are translated, in reading order.
  const std::vector<std::string>& parts() const { return parts_; }

 private:
  OfficeText(ZipArchive archive, OfficeFormat format)
      : archive_(std::move(archive)), format_(format) {}
  ZipArchive archive_;
  OfficeFormat format_;
  std::vector<std::string> parts_;
  std::vector<std::string> texts_;
};

}  // namespace xlate
