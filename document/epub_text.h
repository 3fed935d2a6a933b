// An e-book (.epub: EPUB 2 or 3, a ZIP archive of XHTML content documents) whose text a
// translation replaces. The package document (META-INF/container.xml names it) lists the
// content documents; each is read as HTML (document/html_text.h), its paragraphs translated
// whole with their inline tags on the aligned words: the spine's documents in reading order,
// then the other XHTML documents of the manifest (the navigation document's table of contents).
// Every other entry of the archive (the package document and its metadata, style sheets,
// images, fonts, the uncompressed `mimetype` first) comes back byte for byte
// (document/zip_archive.h), and so does every byte of a content document outside its
// paragraphs' text.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "document/html_text.h"
#include "document/text_runs.h"
#include "document/zip_archive.h"

namespace xlate {

class EpubText : public TextRuns {
 public:
  // INVALID_ARGUMENT when `archive` is not a ZIP archive, has no META-INF/container.xml or
  // package document it names, or has a part that is damaged, over ZipArchive's limits, not
  // well-formed XML (the container and package documents) or over HtmlText's bounds (named).
  static absl::StatusOr<EpubText> Parse(std::string archive);

  const std::vector<std::string>& texts() const override { return texts_; }
  bool needs_word_links() const override;
  // The archive with its content documents rebuilt around the translations (HtmlText::Rebuild).
  // Throws std::runtime_error when libzip cannot write the archive (memory).
  std::string Rebuild(const std::vector<std::string>& translations,
                      const std::vector<WordLinks>& links) const override;

  // The content documents translated, in reading order.
  std::vector<std::string> parts() const;

 private:
  explicit EpubText(ZipArchive archive) : archive_(std::move(archive)) {}
  struct Part {
    std::string name;
    HtmlText document;
  };
  ZipArchive archive_;
  std::vector<Part> parts_;
  std::vector<std::string> texts_;
};

}  // namespace xlate
