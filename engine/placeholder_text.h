// Text with placeholders that a translation must pass through verbatim
// (DecodingOptions.keep_placeholders): format-string and template arguments such as {name},
// {0}, {{var}}, ${var}, %s, %d, %1$s, %(name)s and ICU MessageFormat arguments
// ({count, plural, one {# file} other {# files}}, kept whole). The runs of text between them are
// translated each on its own and put back in place, so every placeholder keeps its bytes and
// its place between the translations of the text around it (a sentence a placeholder cuts is
// translated as its two pieces).
//
// Placeholders, scanned left to right:
//   - a `{` and its matching `}` (braces nest), with a `$` right before it: {name}, {0},
//     {{var}}, ${var}, ICU MessageFormat arguments; an unmatched `{` is text;
//   - a printf conversion: `%`, an optional `(name)` (Python's), an optional `N$` (POSIX
//     positional), flags from "-+#0" (not the space flag: "50 % off" is prose), a width (digits or `*`), a precision (`.` then digits or
//     `*`), length modifiers (hh h ll l L q j z t) and a conversion from "diouxXeEfFgGaAcspn@",
//     or `%%`; a `%` that starts none of these (as in "50 % off") is text.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/text_runs.h"

namespace xlate {

class PlaceholderText : public TextRuns {
 public:
  explicit PlaceholderText(std::string source);

  // The runs between placeholders, without their leading and trailing whitespace (which stays
  // in the text); runs of whitespace only are not listed.
  const std::vector<std::string>& texts() const override { return texts_; }
  // The source with run i replaced by translations[i] (as many as texts()); links are not used.
  std::string Rebuild(const std::vector<std::string>& translations,
                      const std::vector<WordLinks>& links) const override;
  // The same, and where each translation starts in it (*starts, one per run).
  std::string RebuildWithStarts(const std::vector<std::string>& translations,
                                std::vector<size_t>* starts) const;
  // Where run i starts in the source.
  size_t run_begin(size_t i) const { return runs_[i].begin; }
  // The placeholders found, in order (for tests and messages).
  const std::vector<std::string>& placeholders() const { return placeholders_; }

 private:
  struct Run {
    size_t begin = 0, end = 0;
  };
  std::string source_;
  std::vector<std::string> texts_, placeholders_;
  std::vector<Run> runs_;
};

// Placeholders within the runs of another document (an HTML document's blocks): the runs are
// the text between the placeholders of each of the document's runs. The word links of those
// runs make the links of the document's (its inline markup is placed by them).
class PlaceholdersWithin : public TextRuns {
 public:
  explicit PlaceholdersWithin(std::unique_ptr<const TextRuns> document);
  const std::vector<std::string>& texts() const override { return texts_; }
  bool needs_word_links() const override { return document_->needs_word_links(); }
  std::string Rebuild(const std::vector<std::string>& translations,
                      const std::vector<WordLinks>& links) const override;

 private:
  std::unique_ptr<const TextRuns> document_;
  std::vector<PlaceholderText> runs_;  // one per run of document_
  std::vector<size_t> first_text_;     // where each one's texts start in texts_, then the end
  std::vector<std::string> texts_;
};

}  // namespace xlate
