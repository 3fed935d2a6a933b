// Glossaries: source terms and the target terms a translation must use for them, read from a
// file or given inline, and where a sentence holds their source terms. The translation side
// (constrained beam search, rules/beam_search.h) takes the target terms of the terms
// found as constraints.
//
// Files (told by their extension, else by content: a tab on the first entry line is TSV):
//   .tsv  one entry per line, "source<TAB>target"; blank lines and lines starting with '#' are
//         skipped (Cloud Translation's unidirectional TSV, and what a spreadsheet exports);
//   .csv  RFC 4180 (libcsv), either Cloud Translation's unidirectional glossary (rows of
//         source,target) or its equivalent term sets (a header row of language codes, one
//         column each, "pos" and "description" columns ignored; each row a set of equivalent
//         terms, the source and target languages' columns used, rows missing either skipped).
// Errors name the file and line. An empty source or target term, a term over kMaxTermBytes, a
// source term given twice with different targets, or more than kMaxEntries entries is an
// error; the same pair twice is kept once.
//
// Matching: source terms occur where ICU's word boundaries allow (never inside a word), left to
// right, the longest term at each place, not overlapping; with ignore_case both sides are
// case-folded (Unicode full folding: "STRASSE" finds "Straße"), and of source terms that fold
// alike ("bank", "BANK") the one listed last applies (a request's inline entries come after
// the named glossary's). Control and bidirectional formatting characters (U+0000-001F,
// U+007F-009F, U+200E/F, U+202A-202E, U+2066-2069) are refused in either term.
#pragma once

#include <cstddef>
#include <string>
#include "absl/strings/string_view.h"
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"

namespace xlate {

struct GlossaryEntry {
  std::string source;
  std::string target;
};

class Glossary {
 public:
  static constexpr size_t kMaxEntries = 1000000;
  static constexpr size_t kMaxTermBytes = 1000;

  // A file's content; `name` (its path) names it in errors and tells its format by extension.
  // source_language and target_language choose an equivalent-term-sets CSV's columns.
  static absl::StatusOr<Glossary> Parse(absl::string_view content, absl::string_view name,
                                        absl::string_view source_language,
                                        absl::string_view target_language);
  static absl::StatusOr<Glossary> Load(const std::string& path, absl::string_view source_language,
                                       absl::string_view target_language);
  // Entries given inline (a request's); `what` names them in errors ("glossary_config.entries").
  static absl::StatusOr<Glossary> FromEntries(const std::vector<GlossaryEntry>& entries,
                                              absl::string_view what);

  // This glossary's entries with `other`'s added; where both have a source term, other's.
  Glossary With(const Glossary& other) const;

  struct Match {
    size_t begin, end;  // bytes of the sentence
    size_t entry;       // into entries()
  };
  // The source terms `sentence` (UTF-8) holds, in order (see the file comment).
  std::vector<Match> Find(absl::string_view sentence, bool ignore_case) const;

  const std::vector<GlossaryEntry>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }

 private:
  // Adds an entry (trimmed of ASCII whitespace); an error naming `where` for a bad term or a
  // source term already there with another target.
  absl::Status Add(GlossaryEntry entry, const std::string& where);
  void Index();
  // Adds entry i to the indexes (its source term, folded too) and to longest_words_.
  void IndexEntry(size_t i);

  std::vector<GlossaryEntry> entries_;
  std::vector<std::string> where_;  // by entry: the line or index it came from, for errors
  // Source term (UTF-16 as UTF-8 bytes of its ICU form) -> entry: exact and case-folded.
  std::unordered_map<std::string, size_t> exact_, folded_;
  size_t longest_words_ = 0;  // the most word-boundary spans a source term covers
};

}  // namespace xlate
