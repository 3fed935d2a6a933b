#include "document/word_links.h"

#include <unicode/uchar.h>

#include <algorithm>
#include <cctype>
#include <tuple>

#include "text/utf8.h"

namespace xlate {
namespace {

constexpr char kWordStart[] = "\xE2\x96\x81";  // SentencePiece's "▁"

// Per piece, the index of the word it belongs to; *words is the number of words.
std::vector<int> piece_words(const std::vector<std::string>& pieces, int* words) {
  std::vector<int> word_of(pieces.size());
  int word = -1;
  bool after_lone_start = false;  // a lone "▁" piece: the piece after it is in its word
  for (size_t p = 0; p < pieces.size(); ++p) {
    const bool marked = pieces[p].rfind(kWordStart, 0) == 0;
    if (p == 0 || (marked && !after_lone_start)) ++word;
    word_of[p] = word;
    after_lone_start = pieces[p] == kWordStart;
  }
  *words = word + 1;
  return word_of;
}

// Piece word k of `piece_count` as a word of a text of `text_words`.
int text_word(int k, int piece_count, int text_words) {
  if (piece_count == text_words) return k;
  return static_cast<int>(static_cast<long long>(k) * text_words / piece_count);
}

// Whether byte `c` may be part of a word next to a term (ASCII letters and digits, and any
// byte of a multi-byte character): a source term occurs only where neither neighbour is.
bool word_byte(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u >= 0x80 || std::isalnum(u);
}

// The byte offsets where `term` occurs in `text`, in order, not overlapping; on word boundaries
// only when `whole_words`.
std::vector<size_t> occurrences(const std::string& text, const std::string& term, bool whole_words) {
  std::vector<size_t> found;
  if (term.empty()) return found;
  for (size_t at = text.find(term); at != std::string::npos; at = text.find(term, at + 1)) {
    const size_t end = at + term.size();
    if (whole_words && ((at > 0 && word_byte(text[at - 1]) && word_byte(term.front())) ||
                        (end < text.size() && word_byte(text[end]) && word_byte(term.back())))) {
      continue;
    }
    found.push_back(at);
    at = end - 1;
  }
  return found;
}

// The words [first, end) of `words` that bytes [begin, end_byte) touch.
std::pair<int, int> words_touching(const std::vector<ByteRange>& words, size_t begin,
                                   size_t end_byte) {
  int first = 0;
  while (first < static_cast<int>(words.size()) && words[first].end <= begin) ++first;
  int end = first;
  while (end < static_cast<int>(words.size()) && words[end].begin < end_byte) ++end;
  return {first, end};
}

// Links each glossary term's source words to its target's words (AlignedSentence::terms): the
// k-th of S source words to the target words [k·T/S, (k+1)·T/S) of T (at least one each), so
// that a tag around part of a term takes its part and one around all of it takes all. Sorts
// the links and removes duplicates.
void link_terms(WordLinks& out, const AlignedSentence& sentence) {
  for (const auto& [source_term, target_term] : sentence.terms) {
    const std::vector<size_t> in_source = occurrences(sentence.source, source_term, true);
    const std::vector<size_t> in_target = occurrences(sentence.target, target_term, false);
    for (size_t n = 0; n < in_source.size() && n < in_target.size(); ++n) {
      int s_lo, s_hi, t_lo, t_hi;  // plain variables: a lambda below reads them
      std::tie(s_lo, s_hi) =
          words_touching(out.source_words, in_source[n], in_source[n] + source_term.size());
      std::tie(t_lo, t_hi) =
          words_touching(out.target_words, in_target[n], in_target[n] + target_term.size());
      if (s_lo >= s_hi || t_lo >= t_hi) continue;
      out.links.erase(std::remove_if(out.links.begin(), out.links.end(),
                                     [&](const std::pair<int, int>& link) {
                                       return (link.first >= s_lo && link.first < s_hi) ||
                                              (link.second >= t_lo && link.second < t_hi);
                                     }),
                      out.links.end());
      const int sources = s_hi - s_lo, targets = t_hi - t_lo;
      for (int k = 0; k < sources; ++k) {
        const int from = t_lo + k * targets / sources;
        const int to = std::max(from + 1, t_lo + (k + 1) * targets / sources);
        for (int t = from; t < to; ++t) out.links.emplace_back(s_lo + k, t);
      }
    }
  }
  std::sort(out.links.begin(), out.links.end());
  out.links.erase(std::unique(out.links.begin(), out.links.end()), out.links.end());
}

}  // namespace

std::vector<ByteRange> words_of(const std::string& text) {
  std::vector<ByteRange> words;
  size_t pos = 0;
  bool in_word = false;
  while (pos < text.size()) {
    const size_t at = pos;
    char32_t c = 0;
    bool space = false;
    if (decode_utf8(text, &pos, &c)) {
      space = u_isUWhiteSpace(static_cast<UChar32>(c));
    } else {
      ++pos;  // a malformed byte is a word character
    }
    if (!space && !in_word) words.push_back({at, pos});
    if (!space) words.back().end = pos;
    in_word = !space;
  }
  return words;
}

WordLinks link_words(const AlignedSentence& sentence) {
  WordLinks out;
  out.source_words = words_of(sentence.source);
  out.target_words = words_of(sentence.target);
  const size_t source_pieces = sentence.source_pieces.size();
  const size_t target_pieces = sentence.target_pieces.size();
  const size_t width = source_pieces + 1;
  if (out.source_words.empty() || out.target_words.empty() || source_pieces == 0 ||
      target_pieces == 0 || sentence.weights.size() != target_pieces * width) {
    link_terms(out, sentence);
    return out;
  }
  int source_piece_words = 0, target_piece_words = 0;
  const std::vector<int> source_word = piece_words(sentence.source_pieces, &source_piece_words);
  const std::vector<int> target_word = piece_words(sentence.target_pieces, &target_piece_words);
  const int sources = static_cast<int>(out.source_words.size());
  const int targets = static_cast<int>(out.target_words.size());
  // score[t][s]: the attention of target word t's pieces over source word s's, averaged over
  // t's pieces (so that a long target word does not outweigh a short one).
  std::vector<float> score(static_cast<size_t>(targets) * sources, 0.f);
  std::vector<int> pieces_in(targets, 0);
  for (size_t t = 0; t < target_pieces; ++t) {
    const int tw = text_word(target_word[t], target_piece_words, targets);
    ++pieces_in[tw];
    for (size_t s = 0; s < source_pieces; ++s) {
      const int sw = text_word(source_word[s], source_piece_words, sources);
      score[static_cast<size_t>(tw) * sources + sw] += sentence.weights[t * width + s];
    }
  }
  for (int t = 0; t < targets; ++t) {
    if (pieces_in[t] == 0) continue;
    for (int s = 0; s < sources; ++s) score[static_cast<size_t>(t) * sources + s] /= pieces_in[t];
  }
  for (int s = 0; s < sources; ++s) {
    int best = -1;
    for (int t = 0; t < targets; ++t) {
      if (pieces_in[t] == 0) continue;
      if (best < 0 || score[static_cast<size_t>(t) * sources + s] >
                          score[static_cast<size_t>(best) * sources + s]) {
        best = t;
      }
    }
    if (best >= 0) out.links.emplace_back(s, best);
  }
  link_terms(out, sentence);
  return out;
}

void add_links(WordLinks& whole, const WordLinks& part, size_t source_offset,
               size_t target_offset) {
  if (part.source_words.empty() || part.target_words.empty()) return;
  // Index of the word of `words` that starts at byte `begin`, or -1.
  const auto word_at = [](const std::vector<ByteRange>& words, size_t begin) {
    auto found = std::lower_bound(words.begin(), words.end(), begin,
                                  [](const ByteRange& w, size_t at) { return w.begin < at; });
    return found != words.end() && found->begin == begin ? static_cast<int>(found - words.begin())
                                                         : -1;
  };
  for (const auto& [s, t] : part.links) {
    const int source = word_at(whole.source_words, source_offset + part.source_words[s].begin);
    const int target = word_at(whole.target_words, target_offset + part.target_words[t].begin);
    if (source >= 0 && target >= 0) whole.links.emplace_back(source, target);
  }
  std::sort(whole.links.begin(), whole.links.end());
  whole.links.erase(std::unique(whole.links.begin(), whole.links.end()), whole.links.end());
}

WordLinks link_text_words(const std::string& text, const std::string& translation,
                          const std::vector<AlignedSentence>& sentences) {
  WordLinks out;
  out.source_words = words_of(text);
  out.target_words = words_of(translation);
  size_t source_from = 0, target_from = 0;
  for (const AlignedSentence& sentence : sentences) {
    const size_t source_at = sentence.source.empty() ? std::string::npos
                                                     : text.find(sentence.source, source_from);
    const size_t target_at = sentence.target.empty()
                                 ? std::string::npos
                                 : translation.find(sentence.target, target_from);
    if (source_at == std::string::npos || target_at == std::string::npos) continue;
    source_from = source_at + sentence.source.size();
    target_from = target_at + sentence.target.size();
    add_links(out, link_words(sentence), source_at, target_at);
  }
  return out;
}

}  // namespace xlate
