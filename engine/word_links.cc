#include "engine/word_links.h"

#include <unicode/uchar.h>

#include <algorithm>

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
  std::sort(out.links.begin(), out.links.end());
  out.links.erase(std::unique(out.links.begin(), out.links.end()), out.links.end());
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
