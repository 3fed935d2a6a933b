// Texts as the sentences a model trained on single sentences expects. Each text (a paragraph, a
// few lines of a document) is cut into sentences by ICU's sentence BreakIterator for the source
// language; the whitespace and control characters around each sentence, and a text or line
// that holds nothing else, are kept exactly as given and never decoded; so is a piece with no
// letter or digit in it (".", "?!", "🙂"), for which a model would only invent a sentence. A
// text's translation is the text again with each sentence replaced by its translation, so line
// breaks, indentation and paragraph structure survive.
//
//   "  A dog runs. A cat sleeps.\n\nTwo men.\n" -> pieces
//   kept "  " | sentence 0 "A dog runs." | kept " " | sentence 1 "A cat sleeps." |
//   kept "\n\n" | sentence 2 "Two men." | kept "\n"
//
// ICU follows Unicode's sentence rules (UAX #29) with its list of the language's abbreviations
// ("Mr.", "z.B."): "3.50" and "Mr. Smith" stay whole; a line break always ends a sentence. What
// the rules cannot see stays one sentence: a sentence without final punctuation followed by
// another on the same line, and a sentence that starts with a digit and goes on in lower case
// ("... a union jack. 3 boys are ..."). tests/server/test_paragraphs.py measures the effect on
// real text.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace xlate {

enum class Segmentation {
  kSentences,  // ICU sentence boundaries (texts of any length)
  kWholeText,  // each text is one sentence, trimmed of nothing (one-sentence-per-line input)
};

class SegmentedTexts {
 public:
  // `texts` must be valid UTF-8 (INVALID_ARGUMENT naming text i otherwise). `language` is the
  // source's BCP-47 code, for ICU's language-specific rules ("" = ICU's root rules).
  static absl::StatusOr<SegmentedTexts> Split(std::vector<std::string> texts,
                                              const std::string& language,
                                              Segmentation segmentation);

  // The sentences to translate, over all texts in order.
  const std::vector<std::string>& sentences() const { return sentences_; }
  size_t text_count() const { return texts_.size(); }
  // The text that sentence `sentence` came from, and the sentences of text `text`: [first, end).
  size_t text_of(size_t sentence) const { return text_of_sentence_[sentence]; }
  size_t first_sentence(size_t text) const { return first_sentence_[text]; }
  size_t end_sentence(size_t text) const { return first_sentence_[text + 1]; }
  const std::string& text(size_t text) const { return texts_[text]; }

  // Cuts each sentence whose `tokens` (what the model would read of it) exceed `limit` into
  // consecutive sentences that fit, at spaces (the whitespace between them kept as given), and a
  // word longer than the limit on its own between code points: a document's overlong sentence
  // (a long list, a table row) is translated in parts rather than refusing the whole file.
  // `limit` must be at least the tokens of one code point.
  void SplitLongSentences(const std::function<int64_t(absl::string_view)>& tokens, int64_t limit);

  // Text `text` with its sentence s replaced by `translations[s - first_sentence(text)]` and
  // everything else as given. `translations` holds end_sentence - first_sentence entries.
  std::string Join(size_t text, const std::vector<std::string>& translations) const;
  // The start of Join(text, ...) up to the end of the text's sentence `last` (counted from 0
  // within the text): the pieces before it as given, its sentences 0..last replaced by
  // `translations` (at least last + 1 entries; the last may be a translation's prefix). Fewer,
  // or `last` beyond the text's sentences, is a programming error: std::logic_error.
  std::string JoinThrough(size_t text, const std::vector<std::string>& translations,
                          size_t last) const;

 private:
  struct Piece {
    size_t begin, end;  // bytes of the text
    bool sentence;      // translated (else kept as it is)
  };
  SegmentedTexts() = default;
  void AddText(std::string text, const std::vector<size_t>& boundaries);

  std::vector<std::string> texts_;
  std::vector<std::vector<Piece>> pieces_;  // per text
  std::vector<std::string> sentences_;
  std::vector<size_t> text_of_sentence_;
  std::vector<size_t> first_sentence_{0};  // per text, and one past the last
};

// Whether code point `c` is kept around sentences (Unicode White_Space, or a control character
// such as NUL): a text of only these is blank and is never decoded.
bool is_blank_code_point(char32_t c);

// Code points of valid UTF-8 `text`.
int64_t count_code_points(const std::string& text);

}  // namespace xlate
