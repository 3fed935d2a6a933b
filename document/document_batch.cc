#include "document/document_batch.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "document/epub_text.h"
#include "document/gettext_text.h"
#include "document/html_text.h"
#include "document/markdown_text.h"
#include "document/office_text.h"
#include "document/open_document_text.h"
#include "document/placeholder_text.h"
#include "document/subtitle_text.h"
#include "document/text_lines.h"
#include "document/xml_text.h"
#include "text/utf8.h"

namespace xlate {

absl::StatusOr<EntryFormat> entry_format(absl::string_view mime_type, absl::string_view what) {
  if (mime_type.empty() || absl::EqualsIgnoreCase(mime_type, "text/plain")) {
    return EntryFormat::kPlainText;
  }
  if (absl::EqualsIgnoreCase(mime_type, "text/html")) return EntryFormat::kHtml;
  if (absl::EqualsIgnoreCase(mime_type, "text/xml")) return EntryFormat::kXml;
  if (absl::EqualsIgnoreCase(mime_type, kMarkdownMimeType)) return EntryFormat::kMarkdown;
  if (absl::EqualsIgnoreCase(mime_type, kSubRipMimeType)) return EntryFormat::kSubRip;
  if (absl::EqualsIgnoreCase(mime_type, kWebVttMimeType)) return EntryFormat::kWebVtt;
  if (absl::EqualsIgnoreCase(mime_type, kDocxMimeType)) return EntryFormat::kDocx;
  if (absl::EqualsIgnoreCase(mime_type, kPptxMimeType)) return EntryFormat::kPptx;
  if (absl::EqualsIgnoreCase(mime_type, kXlsxMimeType)) return EntryFormat::kXlsx;
  if (absl::EqualsIgnoreCase(mime_type, kEpubMimeType)) return EntryFormat::kEpub;
  if (absl::EqualsIgnoreCase(mime_type, kGettextMimeType) ||
      absl::EqualsIgnoreCase(mime_type, kGettextTemplateMimeType)) {
    return EntryFormat::kGettext;
  }
  for (const char* open_document : {kOdtMimeType, kOdpMimeType, kOdsMimeType}) {
    if (absl::EqualsIgnoreCase(mime_type, open_document)) return EntryFormat::kOpenDocument;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(what, " \"", excerpt(std::string_view(mime_type.data(), mime_type.size())),
                   "\" is not supported; it must be text/plain (or empty), text/html, text/xml, ",
                   kMarkdownMimeType, ", ", kSubRipMimeType, ", ", kWebVttMimeType,
                   ", the type of a .docx, .pptx, .xlsx, .odt, .odp or .ods file, ", kEpubMimeType,
                   ", ", kGettextMimeType, " or ", kGettextTemplateMimeType));
}

std::string mime_type_of_file(absl::string_view file_name) {
  const size_t dot = file_name.rfind('.');
  const size_t slash = file_name.rfind('/');
  if (dot == absl::string_view::npos || (slash != absl::string_view::npos && dot < slash)) {
    return "text/plain";
  }
  const std::string extension = absl::AsciiStrToLower(file_name.substr(dot + 1));
  if (extension == "html" || extension == "htm" || extension == "xhtml") return "text/html";
  if (extension == "xml") return "text/xml";
  if (extension == "md" || extension == "markdown") return kMarkdownMimeType;
  if (extension == "srt") return kSubRipMimeType;
  if (extension == "vtt") return kWebVttMimeType;
  if (extension == "docx") return kDocxMimeType;
  if (extension == "pptx") return kPptxMimeType;
  if (extension == "xlsx") return kXlsxMimeType;
  if (extension == "epub") return kEpubMimeType;
  if (extension == "odt") return kOdtMimeType;
  if (extension == "odp") return kOdpMimeType;
  if (extension == "ods") return kOdsMimeType;
  if (extension == "po") return kGettextMimeType;
  if (extension == "pot") return kGettextTemplateMimeType;
  return "text/plain";
}

bool is_file_format(EntryFormat format) {
  return format == EntryFormat::kDocx || format == EntryFormat::kPptx ||
         format == EntryFormat::kXlsx || format == EntryFormat::kOpenDocument ||
         format == EntryFormat::kEpub;
}

bool is_document(EntryFormat format, bool keep_placeholders) {
  return format != EntryFormat::kPlainText || keep_placeholders;
}

namespace {

// A parsed document, or its parser's refusal.
template <typename Document>
absl::StatusOr<std::unique_ptr<const TextRuns>> owned(absl::StatusOr<Document> parsed) {
  if (!parsed.ok()) return parsed.status();
  return std::make_unique<const Document>(*std::move(parsed));
}

absl::StatusOr<std::unique_ptr<const TextRuns>> parse_entry(std::string entry, EntryFormat format,
                                                            bool keep_placeholders) {
  if (keep_placeholders && is_file_format(format)) {
    return absl::InvalidArgumentError("keep_placeholders applies to text, not to a file");
  }
  switch (format) {
    case EntryFormat::kHtml:
      return owned(HtmlText::Parse(std::move(entry), keep_placeholders));
    case EntryFormat::kXml:
      return owned(XmlText::Parse(std::move(entry), keep_placeholders));
    case EntryFormat::kMarkdown:
      if (keep_placeholders) {
        return absl::InvalidArgumentError("keep_placeholders does not apply to Markdown");
      }
      return owned(MarkdownText::Parse(std::move(entry)));
    case EntryFormat::kSubRip:
    case EntryFormat::kWebVtt:
      if (keep_placeholders) {
        return absl::InvalidArgumentError("keep_placeholders does not apply to subtitles");
      }
      return owned(SubtitleText::Parse(std::move(entry), format == EntryFormat::kSubRip
                                                             ? SubtitleFormat::kSubRip
                                                             : SubtitleFormat::kWebVtt));
    case EntryFormat::kOpenDocument:
      return owned(OpenDocumentText::Parse(std::move(entry)));
    case EntryFormat::kEpub:
      return owned(EpubText::Parse(std::move(entry)));
    case EntryFormat::kGettext:
      // A catalogue's placeholders are always kept: keep_placeholders asks for nothing more.
      return owned(GettextText::Parse(std::move(entry)));
    case EntryFormat::kDocx:
    case EntryFormat::kPptx:
    case EntryFormat::kXlsx: {
      const OfficeFormat office = format == EntryFormat::kDocx   ? OfficeFormat::kDocx
                                  : format == EntryFormat::kPptx ? OfficeFormat::kPptx
                                                                 : OfficeFormat::kXlsx;
      return owned(OfficeText::Parse(std::move(entry), office));
    }
    case EntryFormat::kPlainText:
      break;
  }
  if (!keep_placeholders) return std::make_unique<const TextLines>(entry);
  return std::make_unique<const PlaceholderText>(std::move(entry));
}

}  // namespace

absl::StatusOr<DocumentBatch> DocumentBatch::Parse(std::vector<std::string> entries,
                                                   EntryFormat format, bool keep_placeholders,
                                                   absl::string_view entries_name) {
  DocumentBatch batch;
  for (size_t i = 0; i < entries.size(); ++i) {
    auto document = parse_entry(std::move(entries[i]), format, keep_placeholders);
    if (!document.ok()) {
      if (entries_name.empty()) return document.status();
      return absl::Status(document.status().code(),
                          absl::StrCat(entries_name, "[", i, "]: ", document.status().message()));
    }
    const std::vector<std::string>& texts = (*document)->texts();
    batch.runs_.insert(batch.runs_.end(), texts.begin(), texts.end());
    batch.first_run_.push_back(batch.runs_.size());
    batch.needs_word_links_ = batch.needs_word_links_ || (*document)->needs_word_links();
    batch.documents_.push_back(*std::move(document));
  }
  return batch;
}

size_t DocumentBatch::entry_of_run(size_t run) const {
  // The last entry whose first run is at or before `run` (entries without runs are skipped).
  const auto after = std::upper_bound(first_run_.begin(), first_run_.end(), run);
  return static_cast<size_t>(after - first_run_.begin()) - 1;
}

absl::StatusOr<std::vector<std::string>> DocumentBatch::Rebuild(
    const SegmentedTexts& runs, const std::vector<std::string>& sentence_translations,
    const std::vector<AlignedSentence>& aligned) const {
  std::vector<std::string> run_translations;
  std::vector<WordLinks> run_links;
  for (size_t run = 0; run < runs.text_count(); ++run) {
    const size_t first = runs.first_sentence(run), end = runs.end_sentence(run);
    run_translations.push_back(
        runs.Join(run, std::vector<std::string>(
                           sentence_translations.begin() + static_cast<std::ptrdiff_t>(first),
                           sentence_translations.begin() + static_cast<std::ptrdiff_t>(end))));
    if (!needs_word_links_) continue;
    run_links.push_back(link_text_words(
        runs.text(run), run_translations.back(),
        std::vector<AlignedSentence>(aligned.begin() + static_cast<std::ptrdiff_t>(first),
                                     aligned.begin() + static_cast<std::ptrdiff_t>(end))));
  }
  std::vector<std::string> entries;
  for (size_t entry = 0; entry < documents_.size(); ++entry) {
    const auto slice = [&](const auto& all) {
      if (all.empty()) return std::decay_t<decltype(all)>();
      return std::decay_t<decltype(all)>(
          all.begin() + static_cast<std::ptrdiff_t>(first_run_[entry]),
          all.begin() + static_cast<std::ptrdiff_t>(first_run_[entry + 1]));
    };
    try {
      entries.push_back(documents_[entry]->Rebuild(slice(run_translations), slice(run_links)));
    } catch (const std::runtime_error& error) {  // a file format's writer (OfficeText)
      return absl::ResourceExhaustedError(error.what());
    }
  }
  return entries;
}

AlignedSentence aligned_sentence(const Tokenizer& tokenizer, const std::string& source,
                                 const std::vector<int32_t>& source_ids, const std::string& target,
                                 const Hypothesis& best, const SentenceTerms* terms) {
  AlignedSentence sentence;
  sentence.source = source;
  sentence.target = target;
  for (int32_t id : source_ids) sentence.source_pieces.push_back(tokenizer.source_piece_of(id));
  for (int32_t id : best.tokens) sentence.target_pieces.push_back(tokenizer.piece_of(id));
  sentence.weights = best.alignment;
  for (size_t i = 0; terms != nullptr && i < terms->uses.size(); ++i) {
    const TermUse& use = terms->uses[i];
    if (use.constrained) sentence.terms.emplace_back(use.source, use.target);
  }
  return sentence;
}

}  // namespace xlate
