#include "document/text_segments.h"

#include <algorithm>
#include <stdexcept>

#include <unicode/brkiter.h>
#include <unicode/uchar.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "document/break_boundaries.h"
#include "text/utf8.h"

namespace xlate {
namespace {

// The end of the blank code points that start at `begin`, and the start of those that end at
// `end`, within [begin, end) of valid UTF-8 `text`.
size_t skip_blank_forward(const std::string& text, size_t begin, size_t end) {
  while (begin < end) {
    size_t next = begin;
    char32_t c = 0;
    if (!decode_utf8(text, &next, &c) || !is_blank_code_point(c)) break;
    begin = next;
  }
  return begin;
}

size_t skip_blank_backward(const std::string& text, size_t begin, size_t end) {
  size_t last_content_end = begin;
  for (size_t at = begin; at < end;) {
    char32_t c = 0;
    if (!decode_utf8(text, &at, &c)) break;
    if (!is_blank_code_point(c)) last_content_end = at;
  }
  return last_content_end;
}

// Whether text[begin, end) holds a letter or a digit: something a model can translate. A piece
// of punctuation, symbols or emoji alone ("-", "?!", "🙂") is kept as given; a model asked to
// translate it invents a sentence.
bool has_words(const std::string& text, size_t begin, size_t end) {
  size_t at = begin;
  char32_t c;
  while (at < end && decode_utf8(std::string_view(text).substr(0, end), &at, &c)) {
    if (u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_ALPHABETIC) ||
        u_isdigit(static_cast<UChar32>(c))) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool is_blank_code_point(char32_t c) {
  return u_isUWhiteSpace(static_cast<UChar32>(c)) || u_iscntrl(static_cast<UChar32>(c));
}

int64_t count_code_points(const std::string& text) {
  int64_t count = 0;
  for (unsigned char byte : text) count += (byte & 0xC0) != 0x80;  // lead bytes
  return count;
}

absl::StatusOr<SegmentedTexts> SegmentedTexts::Split(std::vector<std::string> texts,
                                                     const std::string& language,
                                                     Segmentation segmentation) {
  UErrorCode error = U_ZERO_ERROR;
  icu::Locale locale = language.empty() ? icu::Locale::getRoot()
                                        : icu::Locale::forLanguageTag(language, error);
  if (U_FAILURE(error)) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", language, "\" is not a BCP-47 language code"));
  }
  // "ss=standard": ICU's list of the language's abbreviations ("Mr.", "z.B.") that do not end a
  // sentence.
  locale.setKeywordValue("ss", "standard", error);
  error = U_ZERO_ERROR;  // a locale without the list still splits, only more eagerly
  // One iterator for all the texts: making one loads the language's rules.
  std::unique_ptr<icu::BreakIterator> sentences;
  if (segmentation == Segmentation::kSentences) {
    sentences.reset(icu::BreakIterator::createSentenceInstance(locale, error));
    if (U_FAILURE(error)) {
      return absl::InternalError(absl::StrCat("ICU has no sentence rules: ", u_errorName(error)));
    }
  }
  SegmentedTexts result;
  for (size_t i = 0; i < texts.size(); ++i) {
    size_t offset = 0;
    if (!is_valid_utf8(texts[i], &offset)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "text ", i, " is not valid UTF-8 (bad byte sequence at offset ", offset, ")"));
    }
    std::vector<size_t> boundaries{texts[i].size()};
    if (segmentation == Segmentation::kSentences) {
      auto found = break_boundaries(texts[i], *sentences);
      if (!found.ok()) return found.status();
      boundaries = *std::move(found);
    }
    result.AddText(std::move(texts[i]), boundaries);
  }
  return result;
}

void SegmentedTexts::SplitLongSentences(const std::function<int64_t(absl::string_view)>& tokens,
                                        int64_t limit) {
  std::vector<std::string> texts = std::move(texts_);
  std::vector<std::vector<Piece>> pieces = std::move(pieces_);
  *this = SegmentedTexts();
  for (size_t t = 0; t < texts.size(); ++t) {
    const std::string& text = texts[t];
    // The ends of the text's pieces, with the cuts of the overlong sentences among them.
    std::vector<size_t> boundaries;
    for (const Piece& piece : pieces[t]) {
      size_t begin = piece.begin;
      const auto fits = [&](size_t end) {
        return tokens(absl::string_view(text).substr(begin, end - begin)) <= limit;
      };
      // The last of `cuts` (ascending, after begin) whose prefix fits; 0 when none does.
      const auto last_fitting = [&](const std::vector<size_t>& cuts) {
        auto first = std::upper_bound(cuts.begin(), cuts.end(), begin);
        size_t found = 0;
        for (auto count = cuts.end() - first; count > 0;) {  // binary search: prefixes grow
          const auto half = count / 2;
          if (fits(*(first + half))) {
            found = *(first + half);
            first += half + 1;
            count -= half + 1;
          } else {
            count = half;
          }
        }
        return found;
      };
      if (!piece.sentence || fits(piece.end)) {
        boundaries.push_back(piece.end);
        continue;
      }
      std::vector<size_t> spaces, code_points;  // cut points: before a space run; any
      for (size_t at = piece.begin + 1; at < piece.end; ++at) {
        if (text[at] == ' ' && text[at - 1] != ' ') spaces.push_back(at);
        if ((static_cast<unsigned char>(text[at]) & 0xC0) != 0x80) code_points.push_back(at);
      }
      while (!fits(piece.end)) {
        size_t cut = last_fitting(spaces);
        if (cut == 0) cut = last_fitting(code_points);  // one word longer than the limit
        if (cut == 0) {  // not even one code point fits: cut after it all the same
          const auto next = std::upper_bound(code_points.begin(), code_points.end(), begin);
          cut = next == code_points.end() ? piece.end : *next;
        }
        boundaries.push_back(cut);
        begin = skip_blank_forward(text, cut, piece.end);
        if (begin >= piece.end) break;
      }
      boundaries.push_back(piece.end);
    }
    AddText(std::move(texts[t]), boundaries);
  }
}

void SegmentedTexts::AddText(std::string text, const std::vector<size_t>& boundaries) {
  std::vector<Piece> pieces;
  auto keep = [&pieces](size_t begin, size_t end) {
    if (begin == end) return;
    if (!pieces.empty() && !pieces.back().sentence) {
      pieces.back().end = end;  // blank runs between sentences join
    } else {
      pieces.push_back({begin, end, false});
    }
  };
  size_t begin = 0;
  for (size_t end : boundaries) {
    const size_t content_begin = skip_blank_forward(text, begin, end);
    const size_t content_end = skip_blank_backward(text, content_begin, end);
    keep(begin, content_begin);
    if (content_begin < content_end && !has_words(text, content_begin, content_end)) {
      keep(content_begin, content_end);
    } else if (content_begin < content_end) {
      pieces.push_back({content_begin, content_end, true});
      sentences_.push_back(text.substr(content_begin, content_end - content_begin));
      text_of_sentence_.push_back(texts_.size());
    }
    keep(content_end, end);
    begin = end;
  }
  texts_.push_back(std::move(text));
  pieces_.push_back(std::move(pieces));
  first_sentence_.push_back(sentences_.size());
}

std::string SegmentedTexts::Join(size_t text, const std::vector<std::string>& translations) const {
  const size_t sentences = end_sentence(text) - first_sentence(text);
  if (sentences == 0) return texts_[text];
  std::string joined = JoinThrough(text, translations, sentences - 1);
  const Piece& tail = pieces_[text].back();
  if (!tail.sentence) joined.append(texts_[text], tail.begin, tail.end - tail.begin);
  return joined;
}

std::string SegmentedTexts::JoinThrough(size_t text, const std::vector<std::string>& translations,
                                        size_t last) const {
  const size_t sentences = end_sentence(text) - first_sentence(text);
  if (last >= sentences || translations.size() <= last) {
    throw std::logic_error("SegmentedTexts::JoinThrough: sentence " + std::to_string(last) +
                           " of a text of " + std::to_string(sentences) + " sentences, with " +
                           std::to_string(translations.size()) + " translations");
  }
  std::string joined;
  size_t next = 0;
  for (const Piece& piece : pieces_[text]) {
    if (piece.sentence) {
      joined += translations[next];
      if (next++ == last) break;
    } else {
      joined.append(texts_[text], piece.begin, piece.end - piece.begin);
    }
  }
  return joined;
}

}  // namespace xlate
