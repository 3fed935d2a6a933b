// Files from a stranger through the file formats' readers and writers (document/office_text.h,
// document/open_document_text.h, document/epub_text.h, document/subtitle_text.h,
// document/markdown_text.h, document/gettext_text.h): the first byte picks the format, the rest is
// the file. A file is read, or refused with INVALID_ARGUMENT (never another code, never a crash,
// never more than the readers' bounds of memory); one that is read is rebuilt from its texts
// reversed, and an archive rebuilt is an archive of the same entries again.
#include <cstdint>
#include <memory>
#include <string>

#include "document/epub_text.h"
#include "document/gettext_text.h"
#include "document/markdown_text.h"
#include "document/office_text.h"
#include "document/open_document_text.h"
#include "document/subtitle_text.h"
#include "document/zip_archive.h"
#include "tests/fuzz/reversed_translation.h"

namespace {

template <typename Document>
std::unique_ptr<xlate::TextRuns> read(absl::StatusOr<Document> parsed) {
  if (!parsed.ok()) {
    if (parsed.status().code() != absl::StatusCode::kInvalidArgument) __builtin_trap();
    return nullptr;
  }
  return std::make_unique<Document>(*std::move(parsed));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int kind = data[0] % 9;
  std::string source(reinterpret_cast<const char*>(data + 1), size - 1);
  std::unique_ptr<xlate::TextRuns> document;
  switch (kind) {
    case 0:
      document = read(xlate::OfficeText::Parse(source, xlate::OfficeFormat::kDocx));
      break;
    case 1:
      document = read(xlate::OfficeText::Parse(source, xlate::OfficeFormat::kPptx));
      break;
    case 2:
      document = read(xlate::OfficeText::Parse(source, xlate::OfficeFormat::kXlsx));
      break;
    case 3:
      document = read(xlate::OpenDocumentText::Parse(source));
      break;
    case 4:
      document = read(xlate::EpubText::Parse(source));
      break;
    case 5:
      document = read(xlate::SubtitleText::Parse(source, xlate::SubtitleFormat::kSubRip));
      break;
    case 6:
      document = read(xlate::SubtitleText::Parse(source, xlate::SubtitleFormat::kWebVtt));
      break;
    case 8:
      document = read(xlate::GettextText::Parse(source));
      break;
    default:
      document = read(xlate::MarkdownText::Parse(source));
      break;
  }
  if (document == nullptr) return 0;
  const std::string rebuilt = xlate::fuzz::rebuild_reversed(*document);
  if (kind <= 4) {
    auto before = xlate::ZipArchive::Open(source);
    auto after = xlate::ZipArchive::Open(rebuilt);
    if (!before.ok() || !after.ok() || before->names() != after->names()) __builtin_trap();
  }
  return 0;
}
