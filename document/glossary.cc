#include "document/glossary.h"

#include <csv.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>

#include <unicode/brkiter.h>
#include <unicode/locid.h>
#include <unicode/unistr.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "document/break_boundaries.h"
#include "text/utf8.h"

namespace xlate {
namespace {

std::string folded(absl::string_view text) {
  std::string out;
  icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())))
      .foldCase()
      .toUTF8String(out);
  return out;
}

// ICU's word rules, made once (their creation costs far more than matching a sentence) and
// cloned once per thread (a BreakIterator holds the text it walks).
icu::BreakIterator* word_breaks() {
  static const icu::BreakIterator* const prototype = [] {
    UErrorCode error = U_ZERO_ERROR;
    icu::BreakIterator* made = icu::BreakIterator::createWordInstance(icu::Locale::getRoot(), error);
    if (U_FAILURE(error)) {
      delete made;
      return static_cast<icu::BreakIterator*>(nullptr);
    }
    return made;
  }();
  thread_local const std::unique_ptr<icu::BreakIterator> words(
      prototype ? prototype->clone() : nullptr);
  return words.get();
}

// A BCP-47-like language code of a CSV header cell: "en", "de", "pt-BR", "zh-Hant".
bool looks_like_language_code(absl::string_view cell) {
  const std::vector<absl::string_view> parts = absl::StrSplit(cell, absl::ByAnyChar("-_"));
  if (parts[0].size() < 2 || parts[0].size() > 3) return false;
  for (absl::string_view part : parts) {
    if (part.empty() || part.size() > 8) return false;
    for (char c : part) {
      if (!absl::ascii_isalnum(static_cast<unsigned char>(c))) return false;
    }
  }
  return std::all_of(parts[0].begin(), parts[0].end(),
                     [](char c) { return absl::ascii_isalpha(static_cast<unsigned char>(c)); });
}

bool same_language(absl::string_view code, absl::string_view language) {
  if (language.empty()) return false;
  const std::string a = absl::AsciiStrToLower(std::string(code));
  const std::string b = absl::AsciiStrToLower(std::string(language));
  // "de" matches a "de-DE" column and the other way round: a model's language is a base code.
  return a == b || absl::StartsWith(a, b + "-") || absl::StartsWith(b, a + "-") ||
         absl::StartsWith(a, b + "_") || absl::StartsWith(b, a + "_");
}

// The rows of an RFC 4180 CSV text, each with the line it starts on.
struct CsvRows {
  std::vector<std::vector<std::string>> rows;
  std::vector<size_t> lines;
  std::vector<std::string> field_row;
  size_t line = 1;       // the line the parser is on (counted from the bytes it consumed)
  size_t row_line = 1;   // the line the current row started on
};

absl::StatusOr<CsvRows> parse_csv(absl::string_view content, absl::string_view name) {
  csv_parser parser;
  if (csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0) {
    return absl::InternalError("libcsv could not start");
  }
  CsvRows rows;
  auto on_field = [](void* field, size_t length, void* data) {
    auto* out = static_cast<CsvRows*>(data);
    out->field_row.emplace_back(static_cast<const char*>(field), length);
  };
  auto on_row = [](int, void* data) {
    auto* out = static_cast<CsvRows*>(data);
    out->rows.push_back(std::move(out->field_row));
    out->lines.push_back(out->row_line);
    out->field_row.clear();
  };
  // Fed a line at a time, so that an error and each row can name their line.
  size_t at = 0;
  while (at < content.size()) {
    size_t end = content.find('\n', at);
    end = end == absl::string_view::npos ? content.size() : end + 1;
    if (csv_parse(&parser, content.data() + at, end - at, on_field, on_row, &rows) != end - at) {
      const std::string why = csv_strerror(csv_error(&parser));
      csv_free(&parser);
      return absl::InvalidArgumentError(
          absl::StrCat("glossary ", name, " line ", rows.line, ": not CSV (", why, ")"));
    }
    ++rows.line;
    if (rows.field_row.empty()) rows.row_line = rows.line;
    at = end;
  }
  const int finished = csv_fini(&parser, on_field, on_row, &rows);
  csv_free(&parser);
  if (finished != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "glossary ", name, " line ", rows.row_line, ": not CSV (a quote that is never closed)"));
  }
  return rows;
}

}  // namespace

absl::Status Glossary::Add(GlossaryEntry entry, const std::string& where) {
  entry.source = std::string(absl::StripAsciiWhitespace(entry.source));
  entry.target = std::string(absl::StripAsciiWhitespace(entry.target));
  for (const std::string* term : {&entry.source, &entry.target}) {
    const char* side = term == &entry.source ? "source" : "target";
    size_t bad = 0;
    if (term->empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": the ", side, " term is empty"));
    }
    if (term->size() > kMaxTermBytes) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": the ", side, " term has ",
                                                     term->size(), " bytes; the limit is ",
                                                     kMaxTermBytes));
    }
    if (!is_valid_utf8(*term, &bad)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": the ", side, " term is not valid UTF-8 at byte ", bad));
    }
    // Control characters and bidirectional overrides would be forced into the translation
    // (U+202E reverses what follows it on screen): never a term's.
    for (size_t at = 0; at < term->size();) {
      const size_t start = at;
      char32_t c = 0;
      decode_utf8(*term, &at, &c);
      const bool control = c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0x200E || c == 0x200F ||
                           (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
      if (control) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": the ", side, " term holds ", absl::StrFormat("U+%04X", static_cast<int>(c)),
            " at byte ", start, ", a control or bidirectional formatting character"));
      }
    }
  }
  if (const auto same = exact_.find(entry.source); same != exact_.end()) {
    const size_t i = same->second;
    if (entries_[i].target == entry.target) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": the source term \"", entry.source, "\" is on ", where_[i],
        " too, with another target (\"", entries_[i].target, "\" and \"", entry.target, "\")"));
  }
  if (entries_.size() >= kMaxEntries) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": more than ", kMaxEntries, " entries"));
  }
  exact_[entry.source] = entries_.size();
  entries_.push_back(std::move(entry));
  where_.push_back(where);
  return absl::OkStatus();
}

void Glossary::IndexEntry(size_t i) {
  exact_[entries_[i].source] = i;
  folded_[folded(entries_[i].source)] = i;
  icu::BreakIterator* const words = word_breaks();
  absl::StatusOr<std::vector<size_t>> spans =
      words ? break_boundaries(entries_[i].source, *words) : absl::StatusOr<std::vector<size_t>>();
  longest_words_ = std::max(longest_words_, spans.ok() ? spans->size() : size_t{1});
}

void Glossary::Index() {
  for (size_t i = 0; i < entries_.size(); ++i) IndexEntry(i);
}

absl::StatusOr<Glossary> Glossary::Parse(absl::string_view content, absl::string_view name,
                                         absl::string_view source_language,
                                         absl::string_view target_language) {
  size_t bad = 0;
  if (!is_valid_utf8(std::string_view(content.data(), content.size()), &bad)) {
    return absl::InvalidArgumentError(
        absl::StrCat("glossary ", name, " is not valid UTF-8 at byte ", bad));
  }
  if (absl::StartsWith(content, "\xEF\xBB\xBF")) content.remove_prefix(3);  // a spreadsheet's BOM
  const std::string lower_name = absl::AsciiStrToLower(std::string(name));
  bool csv = absl::EndsWith(lower_name, ".csv");
  if (!csv && !absl::EndsWith(lower_name, ".tsv")) {
    for (absl::string_view line : absl::StrSplit(content, '\n')) {
      if (absl::StripAsciiWhitespace(line).empty() || absl::StartsWith(line, "#")) continue;
      csv = line.find('\t') == absl::string_view::npos;
      break;
    }
  }
  Glossary glossary;
  if (!csv) {
    size_t number = 0;
    for (absl::string_view line : absl::StrSplit(content, '\n')) {
      ++number;
      if (absl::EndsWith(line, "\r")) line.remove_suffix(1);
      if (absl::StripAsciiWhitespace(line).empty() || absl::StartsWith(line, "#")) continue;
      const std::vector<absl::string_view> fields = absl::StrSplit(line, '\t');
      const std::string where = absl::StrCat("glossary ", name, " line ", number);
      if (fields.size() != 2) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": ", fields.size(), " tab-separated fields; an entry is source<TAB>target"));
      }
      absl::Status added = glossary.Add({std::string(fields[0]), std::string(fields[1])}, where);
      if (!added.ok()) return added;
    }
  } else {
    absl::StatusOr<CsvRows> rows = parse_csv(content, name);
    if (!rows.ok()) return rows.status();
    size_t first = 0;
    int source_column = 0, target_column = 1;
    const bool header = !rows->rows.empty() && rows->rows[0].size() >= 2 &&
                        std::all_of(rows->rows[0].begin(), rows->rows[0].end(),
                                    [](const std::string& cell) {
                                      return looks_like_language_code(cell) || cell == "pos" ||
                                             cell == "description";
                                    });
    if (header) {  // equivalent term sets
      source_column = target_column = -1;
      const std::vector<std::string>& codes = rows->rows[0];
      for (size_t c = 0; c < codes.size(); ++c) {
        if (source_column < 0 && same_language(codes[c], source_language)) source_column = int(c);
        if (target_column < 0 && same_language(codes[c], target_language)) target_column = int(c);
      }
      if (source_column < 0 || target_column < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "glossary ", name, ": its header names the languages ", absl::StrJoin(codes, ", "),
            "; the model translates ", source_language.empty() ? "?" : source_language, " to ",
            target_language.empty() ? "?" : target_language));
      }
      first = 1;
    }
    for (size_t r = first; r < rows->rows.size(); ++r) {
      const std::vector<std::string>& row = rows->rows[r];
      const std::string where = absl::StrCat("glossary ", name, " line ", rows->lines[r]);
      if (row.size() == 1 && absl::StripAsciiWhitespace(row[0]).empty()) continue;
      if (!header && row.size() != 2) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": ", row.size(), " fields; a unidirectional glossary's rows are source,target "
            "(equivalent term sets start with a header row of language codes)"));
      }
      const size_t needed = static_cast<size_t>(std::max(source_column, target_column)) + 1;
      if (header && (row.size() < needed || absl::StripAsciiWhitespace(row[source_column]).empty() ||
                     absl::StripAsciiWhitespace(row[target_column]).empty())) {
        continue;  // a set without a term in one of the two languages
      }
      absl::Status added = glossary.Add({row[source_column], row[target_column]}, where);
      if (!added.ok()) return added;
    }
  }
  glossary.Index();
  return glossary;
}

absl::StatusOr<Glossary> Glossary::Load(const std::string& path,
                                        absl::string_view source_language,
                                        absl::string_view target_language) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open the glossary ", path));
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("reading the glossary ", path, " failed"));
  return Parse(content.str(), path, source_language, target_language);
}

absl::StatusOr<Glossary> Glossary::FromEntries(const std::vector<GlossaryEntry>& entries,
                                               absl::string_view what) {
  Glossary glossary;
  for (size_t i = 0; i < entries.size(); ++i) {
    absl::Status added = glossary.Add(entries[i], absl::StrCat(what, "[", i, "]"));
    if (!added.ok()) return added;
  }
  glossary.Index();
  return glossary;
}

Glossary Glossary::With(const Glossary& other) const {
  // This glossary's indexes stay; only other's entries are indexed (a named glossary may be
  // large, and a request's inline entries few).
  Glossary merged = *this;
  for (size_t j = 0; j < other.entries_.size(); ++j) {
    const auto same = merged.exact_.find(other.entries_[j].source);
    size_t i = merged.entries_.size();
    if (same != merged.exact_.end()) {
      i = same->second;
      merged.entries_[i] = other.entries_[j];
      merged.where_[i] = other.where_[j];
    } else {
      merged.entries_.push_back(other.entries_[j]);
      merged.where_.push_back(other.where_[j]);
    }
    merged.IndexEntry(i);
  }
  return merged;
}

std::vector<Glossary::Match> Glossary::Find(absl::string_view sentence, bool ignore_case) const {
  std::vector<Match> matches;
  if (entries_.empty() || sentence.empty()) return matches;
  icu::BreakIterator* const words = word_breaks();
  if (!words) return matches;
  absl::StatusOr<std::vector<size_t>> found =
      break_boundaries(std::string_view(sentence.data(), sentence.size()), *words);
  if (!found.ok()) return matches;
  std::vector<size_t> boundaries = {0};
  boundaries.insert(boundaries.end(), found->begin(), found->end());
  const auto& index = ignore_case ? folded_ : exact_;
  for (size_t b = 0; b + 1 < boundaries.size();) {
    size_t taken = 0;  // boundaries the match spans
    const size_t farthest = std::min(boundaries.size() - 1, b + longest_words_);
    for (size_t e = farthest; e > b && taken == 0; --e) {
      const absl::string_view span = sentence.substr(boundaries[b], boundaries[e] - boundaries[b]);
      const auto hit =
          index.find(ignore_case ? folded(span) : std::string(span.data(), span.size()));
      if (hit == index.end()) continue;
      matches.push_back({boundaries[b], boundaries[e], hit->second});
      taken = e - b;
    }
    b += taken > 0 ? taken : 1;
  }
  return matches;
}

}  // namespace xlate
