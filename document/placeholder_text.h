// Text with placeholders that a translation must pass through verbatim
// (DecodingOptions.keep_placeholders): format-string and template arguments such as {name},
// {0}, {{var}}, ${var}, %s, %d, %1$s, %(name)s and ICU MessageFormat arguments
// ({count, plural, one {# file} other {# files}}, kept whole). The placeholders are taken out of
// the text, which is translated whole ("You have {n} new messages" reads "You have new
// messages"), and put back as inline markup without text is (document/inline_markup.h): before
// the translation of the word that followed them, or after the word they were attached to
// ("Hello {name}, ..." -> "Hallo {name}, ..."), with the spaces they had.
//
// Placeholders, scanned left to right:
//   - a `{` and its matching `}` (braces nest), with a `$` right before it: {name}, {0},
//     {{var}}, ${var}, ICU MessageFormat arguments; an unmatched `{` is text;
//   - a printf conversion: `%`, an optional `(name)` (Python's), an optional `N$` (POSIX
//     positional), flags from "-+#0" (not the space flag: "50 % off" is prose), a width (digits
//     or `*`), a precision (`.` then digits or `*`), length modifiers (hh h ll l L q j z t) and a
//     conversion from "diouxXeEfFgGaAcspn@", or `%%`; a `%` that starts none of these (as in
//     "50 % off") is text.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "document/inline_markup.h"
#include "document/text_runs.h"

namespace xlate {

// The placeholders of `text`, in order.
std::vector<ByteRange> find_placeholders(absl::string_view text);

// Appends `text` to a block's text with its placeholders taken out: `append` adds the text
// between them to `block_text` (as the block keeps text: its white space collapsed, or as it
// is), and each placeholder becomes a point element of `elements` (inside element `parent`,
// -1: none) at its place, whose markup is escape(placeholder). A space on both sides of a
// placeholder is kept once; a space before one that punctuation follows goes with it.
// `text_may_follow`: `text` is one run of a block whose next run may follow (a text node of
// HTML or XML), so a placeholder ending it keeps the space before it in the text (what follows
// is not known yet: "Hello <b>%s</b> world" reads "Hello world").
void append_without_placeholders(absl::string_view text, int parent,
                                 std::string (*escape)(absl::string_view),
                                 const std::function<void(absl::string_view)>& append,
                                 std::string& block_text, std::vector<InlineElement>& elements,
                                 bool text_may_follow = false);

class PlaceholderText : public TextRuns {
 public:
  explicit PlaceholderText(std::string source);

  // The text without its placeholders and without white space at either end: one text, or
  // none when nothing but placeholders and white space is left.
  const std::vector<std::string>& texts() const override { return texts_; }
  bool needs_word_links() const override { return !elements_.empty(); }
  // The translation with the placeholders placed by `links` (when needs_word_links()) and the
  // source's white space at either end.
  std::string Rebuild(const std::vector<std::string>& translations,
                      const std::vector<WordLinks>& links) const override;
  // The placeholders found, in order (for tests and messages).
  const std::vector<std::string>& placeholders() const { return placeholders_; }

 private:
  std::string source_, leading_, trailing_;
  std::vector<std::string> texts_, placeholders_;
  std::vector<InlineElement> elements_;
};

}  // namespace xlate
