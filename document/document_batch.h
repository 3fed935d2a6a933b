// The one document pipeline of the CLI, gRPC and REST: a batch of entries in one format (HTML,
// XML, or plain text whose placeholders are kept) becomes the runs of text the engine
// translates, and the runs' translations become the entries again, every byte outside the runs
// as it came and inline markup on the words it was aligned to.
//
//   entries --Parse--> runs() --SegmentedTexts::Split--> sentences --engine--> best hypotheses
//     --aligned_sentence (when needs_word_links())--> Rebuild --> one translation per entry
//
// Plain text without placeholders is not a document: its entries are translated as they are,
// with what only whole entries have (n-best lists, scores, target prefixes, streaming).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "document/glossary_terms.h"
#include "document/text_runs.h"
#include "document/text_segments.h"
#include "document/word_links.h"
#include "engine/decoding/search.h"
#include "engine/tokenizer.h"

namespace xlate {

enum class EntryFormat {
  kPlainText,
  kHtml,
  kXml,
  kMarkdown,
  kSubRip,
  kWebVtt,
  kDocx,
  kPptx,
  kXlsx,
  kOpenDocument,
  kEpub,
  kGettext
};

// The MIME types of subtitles (document/subtitle_text.h): SubRip has no registered one; this is
// the one most tools send.
inline constexpr char kSubRipMimeType[] = "application/x-subrip";
inline constexpr char kWebVttMimeType[] = "text/vtt";
// Markdown (document/markdown_text.h).
inline constexpr char kMarkdownMimeType[] = "text/markdown";

// The MIME types of Office Open XML files (document/office_text.h).
inline constexpr char kDocxMimeType[] =
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
inline constexpr char kPptxMimeType[] =
    "application/vnd.openxmlformats-officedocument.presentationml.presentation";
inline constexpr char kXlsxMimeType[] =
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
// The MIME types of OpenDocument files (document/open_document_text.h).
inline constexpr char kOdtMimeType[] = "application/vnd.oasis.opendocument.text";
inline constexpr char kOdpMimeType[] = "application/vnd.oasis.opendocument.presentation";
inline constexpr char kOdsMimeType[] = "application/vnd.oasis.opendocument.spreadsheet";
// An e-book (document/epub_text.h).
inline constexpr char kEpubMimeType[] = "application/epub+zip";
// gettext catalogues (document/gettext_text.h): shared-mime-info's types of a .po and a .pot.
inline constexpr char kGettextMimeType[] = "text/x-gettext-translation";
inline constexpr char kGettextTemplateMimeType[] = "text/x-gettext-translation-template";

// Whether entries of `format` are files (bytes of an archive), not text.
bool is_file_format(EntryFormat format);

// The format a MIME type names, case-insensitively (RFC 2045): "" and "text/plain" are plain
// text; anything but text/html, text/xml, text/markdown, the subtitles', Office Open XML and
// OpenDocument types, kEpubMimeType and the gettext catalogues' is INVALID_ARGUMENT naming what it
// may be. `what` names the field in the message ("mime_type", "--mime_type").
absl::StatusOr<EntryFormat> entry_format(absl::string_view mime_type, absl::string_view what);

// The MIME type a file's name implies by its extension, case-insensitively: text/html for .html,
// .htm and .xhtml, text/xml for .xml, text/markdown for .md and .markdown, the subtitles' for
// .srt and .vtt, the Office Open XML
// types for .docx, .pptx and .xlsx,
// the OpenDocument types for .odt, .odp and .ods, kEpubMimeType for .epub, the gettext ones for
// .po and .pot, text/plain for any other.
std::string mime_type_of_file(absl::string_view file_name);

// Whether entries of `format` are rebuilt from their runs (DocumentBatch) rather than
// translated whole.
bool is_document(EntryFormat format, bool keep_placeholders);

class DocumentBatch {
 public:
  // Each entry parsed as `format` (document/html_text.h, document/xml_text.h,
  // document/markdown_text.h, document/subtitle_text.h, document/office_text.h,
  // document/open_document_text.h, document/epub_text.h, document/gettext_text.h; plain text as
  // document/placeholder_text.h, or without keep_placeholders as a text file's lines,
  // document/text_lines.h), keep_placeholders for HTML and XML too (a file format refuses it).
  // INVALID_ARGUMENT naming the entry as `entries_name`[i] when a parser refuses it (depth,
  // tags, size: each parser's bounds), or by the parser's message alone when `entries_name`
  // is empty (a CLI's one document).
  static absl::StatusOr<DocumentBatch> Parse(std::vector<std::string> entries, EntryFormat format,
                                             bool keep_placeholders,
                                             absl::string_view entries_name);

  size_t entry_count() const { return documents_.size(); }
  // The runs to translate, every entry's in order: entry e's are [first_run(e), first_run(e+1)).
  const std::vector<std::string>& runs() const { return runs_; }
  size_t first_run(size_t entry) const { return first_run_[entry]; }
  // The entry that run `run` is in.
  size_t entry_of_run(size_t run) const;
  // Whether an entry has inline markup or placeholders to place: then the translation needs
  // its alignments (kMarkupAlignment) and Rebuild its sentences' aligned_sentence()s.
  bool needs_word_links() const { return needs_word_links_; }

  // Each entry rebuilt from the translations of its runs. `runs` is runs() as split for the
  // engine; sentence_translations[s] is the best translation of its sentence s; `aligned` holds
  // one aligned_sentence() per sentence when needs_word_links(), else nothing.
  // RESOURCE_EXHAUSTED when a format cannot write its file (an archive's writer out of memory).
  absl::StatusOr<std::vector<std::string>> Rebuild(
      const SegmentedTexts& runs, const std::vector<std::string>& sentence_translations,
      const std::vector<AlignedSentence>& aligned) const;

 private:
  DocumentBatch() = default;
  std::vector<std::unique_ptr<const TextRuns>> documents_;
  std::vector<std::string> runs_;
  std::vector<size_t> first_run_{0};  // per entry, and one past the last
  bool needs_word_links_ = false;
};

// A translated sentence as word linking reads it: its source as cut and its source token ids
// (language tokens included, the end token not), the text of its best hypothesis and that
// hypothesis (tokens and alignment, kMarkupAlignment's), and the glossary terms it was
// constrained with (null: none).
AlignedSentence aligned_sentence(const Tokenizer& tokenizer, const std::string& source,
                                 const std::vector<int32_t>& source_ids,
                                 const std::string& target, const Hypothesis& best,
                                 const SentenceTerms* terms);

}  // namespace xlate
