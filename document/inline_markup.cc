#include "document/inline_markup.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace xlate {
namespace {

// Target words [lo, hi) an element takes (lo == hi: none, placed before word lo). A kept
// element replaces the translation's bytes [kept_begin, kept_end) (within those words).
struct WordSpan {
  WordSpan() = default;
  WordSpan(int first, int end) : lo(first), hi(end) {}
  int lo = 0, hi = 0;
  size_t kept_begin = 0, kept_end = 0;
  // The element cut its first or last source word before punctuation ("(<b>word</b>)",
  // "<b>word</b>."): its tags go inside the target words' punctuation too.
  bool after_leading_punctuation = false, before_trailing_punctuation = false;
  // An element without text written after word lo - 1 (== hi - 1) rather than before word lo;
  // what followed it in its source word ("," of "Hello{name},").
  bool after_word = false;
  std::string word_suffix;
};

bool is_ascii_punctuation(char c) { return c > ' ' && c < 127 && !std::isalnum(static_cast<unsigned char>(c)); }

// Where `words` of `translation` hold `text` verbatim: its first occurrence from byte `after` that starts at a
// word's start or after punctuation, and ends at a word's end or before punctuation. Sets the
// words it touches and the bytes; false when there is none.
bool find_verbatim(const std::string& translation, const std::vector<ByteRange>& words,
                   const std::string& text, size_t after, WordSpan* at) {
  if (text.empty()) return false;
  for (size_t from = translation.find(text, after); from != std::string::npos;
       from = translation.find(text, from + 1)) {
    const size_t to = from + text.size();
    const bool starts = from == 0 || is_ascii_punctuation(translation[from - 1]) ||
                        std::any_of(words.begin(), words.end(),
                                    [&](const ByteRange& w) { return w.begin == from; });
    const bool ends = to == translation.size() || is_ascii_punctuation(translation[to]) ||
                      std::any_of(words.begin(), words.end(),
                                  [&](const ByteRange& w) { return w.end == to; });
    if (!starts || !ends) continue;
    int lo = 0;
    while (lo < static_cast<int>(words.size()) && words[lo].end <= from) ++lo;
    int hi = lo;
    while (hi < static_cast<int>(words.size()) && words[hi].begin < to) ++hi;
    *at = WordSpan(lo, hi);
    at->kept_begin = from;
    at->kept_end = to;
    return true;
  }
  return false;
}

// Where element `e`'s words go in the translation, before nesting is enforced.
WordSpan place(const InlineElement& e, const std::string& source, const WordLinks& links) {
  const auto& sources = links.source_words;
  const int targets = static_cast<int>(links.target_words.size());
  // The first target word linked to source word s or, when it has none, to a later one.
  const auto first_target_from = [&](size_t s) {
    for (; s < sources.size(); ++s) {
      for (const auto& [source, target] : links.links) {
        if (source == static_cast<int>(s)) return target;  // links are sorted: the smallest
      }
    }
    return targets;
  };
  if (e.span.begin == e.span.end) {
    // After the last word: at the end of the translation.
    if (sources.empty() || e.span.begin >= sources.back().end) return {targets, targets};
    // The word the point ends or is inside of, if any: after its translation.
    size_t word = 0;
    while (word < sources.size() && sources[word].end < e.span.begin) ++word;
    if (word < sources.size() && sources[word].begin < e.span.begin) {
      int last_target = -1;
      for (const auto& [source, target] : links.links) {
        if (source == static_cast<int>(word)) last_target = std::max(last_target, target);
      }
      if (last_target >= 0) {
        WordSpan at{last_target + 1, last_target + 1};
        at.after_word = true;
        at.before_trailing_punctuation = e.span.begin < sources[word].end;
        at.word_suffix = source.substr(e.span.begin, sources[word].end - e.span.begin);
        return at;
      }
      ++word;  // unlinked: before the next linked word's translation
    }
    const int at = first_target_from(word);
    return {at, at};
  }
  size_t first = 0;
  while (first < sources.size() && sources[first].end <= e.span.begin) ++first;
  size_t last = first;  // one past the span's last word
  while (last < sources.size() && sources[last].begin < e.span.end) ++last;
  if (!sources.empty() && first == 0 && last == sources.size() &&
      e.span.begin <= sources.front().begin && e.span.end >= sources.back().end) {
    return {0, targets};
  }
  int lo = targets, hi = -1;
  for (const auto& [source, target] : links.links) {
    if (source >= static_cast<int>(first) && source < static_cast<int>(last)) {
      lo = std::min(lo, target);
      hi = std::max(hi, target);
    }
  }
  if (hi < 0) {
    const int at = first_target_from(last);
    return {at, at};
  }
  WordSpan at{lo, hi + 1};
  // Punctuation the element did not hold stays outside it: what it cut off its own words
  // ("<b>bike</b>.") and what the translation's words carry ("weil er <b>war</b>." for
  // "because he <b>was</b>": the sentence's full stop, not the word's).
  at.after_leading_punctuation = !is_ascii_punctuation(source[e.span.begin]);
  at.before_trailing_punctuation = !is_ascii_punctuation(source[e.span.end - 1]);
  return at;
}

class MarkupWriter {
 public:
  MarkupWriter(const std::string& translation, const std::vector<InlineElement>& elements,
               const std::vector<ByteRange>& words, std::string (*escape)(absl::string_view))
      : text_(translation), elements_(elements), words_(words), escape_(escape) {}

  // Writes the translation from where it stands with `children` (indices of elements, in
  // order) placed at `placements`, up to the last child's end (the caller writes the rest of
  // its words [.., hi)).
  void Write(const std::vector<int>& children, const std::vector<WordSpan>& placements,
             const std::vector<std::vector<int>>& children_of, int hi) {
    for (int c : children) {
      const WordSpan& at = placements[c];
      const InlineElement& element = elements_[c];
      if (element.span.begin == element.span.end && !element.kept_content) {
        // Its children (points too: <b>%s</b>) go inside it.
        WritePoint(element, at, hi, [&] { Write(children_of[c], placements, children_of, at.hi); });
        continue;
      }
      WriteThrough(at.lo);
      if (at.lo < hi) WriteGapBefore(at.lo);
      if (element.kept_content) {
        // The translation's bytes up to the kept text (punctuation before it), the element,
        // and what follows the kept text in its last word after it.
        WriteTo(at.kept_begin);
        out_ += element.open;
        out_ += *element.kept_content;
        out_ += element.close;
        written_ = std::max(written_, at.kept_end);
        continue;
      }
      if (at.after_leading_punctuation && at.lo < at.hi) {
        WriteTo(skip_punctuation(words_[at.lo], /*leading=*/true));
      }
      out_ += element.open;
      Write(children_of[c], placements, children_of, at.hi);
      if (at.before_trailing_punctuation && at.lo < at.hi) {
        WriteTo(skip_punctuation(words_[at.hi - 1], /*leading=*/false));
      } else {
        WriteThrough(at.hi);
      }
      out_ += element.close;
    }
  }

  std::string Finish() {
    if (written_ < text_.size()) out_ += escape_(absl::string_view(text_).substr(written_));
    return std::move(out_);
  }

 private:
  // The text up to the end of word k - 1.
  void WriteThrough(int k) {
    if (k <= 0) return;
    WriteTo(words_[k - 1].end);
  }
  // The white space before word k.
  void WriteGapBefore(int k) {
    if (k < static_cast<int>(words_.size())) WriteTo(words_[k].begin);
  }
  // An element without text: after word lo - 1 (before its trailing punctuation when the
  // source had the element before punctuation), or before word lo; with its spaces.
  template <typename WriteChildren>
  void WritePoint(const InlineElement& element, const WordSpan& at, int hi,
                  const WriteChildren& write_children) {
    const int words = static_cast<int>(words_.size());
    if (at.after_word && at.lo > 0) {
      const ByteRange& word = words_[at.lo - 1];
      WriteThrough(at.lo - 1);
      WriteGapBefore(at.lo - 1);
      // Before the same ending as in the source when the translated word has it ("(%d," ->
      // "(%d,"), else before its trailing punctuation.
      const absl::string_view translated(text_.data() + word.begin, word.end - word.begin);
      size_t stop = word.end;
      if (!at.word_suffix.empty() && absl::EndsWith(translated, at.word_suffix)) {
        stop = word.end - at.word_suffix.size();
      } else if (at.before_trailing_punctuation) {
        stop = skip_punctuation(word, false);
      }
      WriteTo(stop);
      if (element.space_before) out_ += ' ';
      out_ += element.open;
      write_children();
      out_ += element.close;
      return;
    }
    WriteThrough(at.lo);
    if (at.lo < hi) WriteGapBefore(at.lo);
    if (at.lo == words && element.space_before && written_ > 0) out_ += ' ';
    out_ += element.open;
    write_children();
    out_ += element.close;
    if (at.lo < words && element.space_after) out_ += ' ';
  }

  // Where a word's text starts after its leading ASCII punctuation, or ends before its
  // trailing punctuation (a word of punctuation only stays whole).
  size_t skip_punctuation(const ByteRange& word, bool leading) const {
    size_t begin = word.begin, end = word.end;
    if (leading) {
      while (begin < end && is_ascii_punctuation(text_[begin])) ++begin;
      return begin < end ? begin : word.begin;
    }
    while (end > begin && is_ascii_punctuation(text_[end - 1])) --end;
    return end > begin ? end : word.end;
  }
  void WriteTo(size_t end) {
    if (end <= written_) return;
    out_ += escape_(absl::string_view(text_).substr(written_, end - written_));
    written_ = end;
  }

  const std::string& text_;
  const std::vector<InlineElement>& elements_;
  const std::vector<ByteRange>& words_;
  std::string (*escape_)(absl::string_view);
  std::string out_;
  size_t written_ = 0;
};


// Places the children of one element (or the roots) within `bounds`: each where its linked
// words are, then, in the order of those words, each after the ones before it, so that siblings
// never overlap and follow the translation's word order ("because he <b>was</b> <i>tired</i>"
// -> "weil er <i>müde</i> <b>war</b>"). A kept element found verbatim keeps its bytes (two may
// share a word: "<kbd>Ctrl</kbd>+<kbd>C</kbd>"), unless a sibling before it already took them.
// Fills placements[c] and sets `children` to their order in the translation, then places each
// child's children within it.
class GroupPlacer {
 public:
  GroupPlacer(const std::string& source, const std::string& translation,
              const std::vector<InlineElement>& elements, const WordLinks& links,
              const std::vector<ByteRange>& words)
      : source_(source), translation_(translation), elements_(elements), links_(links),
        words_(words), placements_(elements.size()) {}

  void Place(std::vector<int>& children, const WordSpan& bounds,
             std::vector<std::vector<int>>& children_of) {
    const int targets = static_cast<int>(words_.size());
    std::vector<bool> verbatim(elements_.size(), false);
    size_t kept_after = bounds.lo < targets ? words_[bounds.lo].begin : translation_.size();
    for (int c : children) {
      const InlineElement& element = elements_[c];
      WordSpan& at = placements_[c];
      if (element.kept_content &&
          find_verbatim(translation_, words_, element.kept_text, kept_after, &at) &&
          at.lo >= bounds.lo && at.hi <= bounds.hi) {
        verbatim[c] = true;
        kept_after = at.kept_end;
        continue;
      }
      at = Wanted(c, bounds);
    }
    // The translation's order: by first word, a point before a word starting there, then the
    // source's order.
    std::stable_sort(children.begin(), children.end(), [&](int a, int b) {
      return placements_[a].lo < placements_[b].lo;
    });
    int end = bounds.lo;         // words the siblings so far took
    size_t end_byte = bounds.lo < targets ? words_[bounds.lo].begin : translation_.size();
    for (int c : children) {
      WordSpan& at = placements_[c];
      if (verbatim[c] && at.kept_begin < end_byte) {
        verbatim[c] = find_verbatim(translation_, words_, elements_[c].kept_text, end_byte, &at) &&
                      at.lo >= bounds.lo && at.hi <= bounds.hi;
        if (!verbatim[c]) at = Wanted(c, bounds);
      }
      if (!verbatim[c]) {
        const WordSpan wanted = at;
        at.lo = std::clamp(at.lo, end, bounds.hi);
        at.hi = std::clamp(at.hi, at.lo, bounds.hi);
        if (at.lo != wanted.lo) at.after_word = false;
        // Whole words (none: the bytes before word lo).
        at.kept_begin = at.lo < targets ? words_[at.lo].begin : translation_.size();
        at.kept_end = at.hi > at.lo ? words_[at.hi - 1].end : at.kept_begin;
      }
      end = std::max(end, at.hi);
      end_byte = std::max(end_byte, elements_[c].kept_content ? at.kept_end
                                    : at.hi > at.lo            ? words_[at.hi - 1].end
                                                               : end_byte);
    }
    for (int c : children) Place(children_of[c], placements_[c], children_of);
  }

  const std::vector<WordSpan>& placements() const { return placements_; }

 private:
  // Where element c's linked words put it, within its parent's bounds.
  WordSpan Wanted(int c, const WordSpan& bounds) const {
    const InlineElement& element = elements_[c];
    WordSpan at = place(element, source_, links_);
    if (element.close.empty() && !element.kept_content && element.span.begin < element.span.end) {
      at.hi = bounds.hi;  // no end tag: it runs to its parent's end
      at.before_trailing_punctuation = false;
    }
    const WordSpan wanted = at;
    at.lo = std::clamp(at.lo, bounds.lo, bounds.hi);
    at.hi = std::clamp(at.hi, at.lo, bounds.hi);
    if (at.lo != wanted.lo) at.after_word = false;
    return at;
  }

  const std::string& source_;
  const std::string& translation_;
  const std::vector<InlineElement>& elements_;
  const WordLinks& links_;
  const std::vector<ByteRange>& words_;
  std::vector<WordSpan> placements_;
};

}  // namespace

std::string place_inline_markup(const std::string& source, const std::string& translation,
                                const std::vector<InlineElement>& elements,
                                const WordLinks& links,
                                std::string (*escape)(absl::string_view)) {
  const std::vector<ByteRange> words = words_of(translation);
  if (words.size() != links.target_words.size()) {
    throw std::logic_error("place_inline_markup: links of another translation");
  }
  const int targets = static_cast<int>(words.size());
  std::vector<std::vector<int>> children_of(elements.size());
  std::vector<int> roots;
  for (size_t i = 0; i < elements.size(); ++i) {
    const int parent = elements[i].parent;
    if (parent >= static_cast<int>(i)) {
      throw std::logic_error("place_inline_markup: a parent after its child");
    }
    (parent < 0 ? roots : children_of[parent]).push_back(static_cast<int>(i));
  }
  GroupPlacer placer(source, translation, elements, links, words);
  placer.Place(roots, WordSpan{0, targets}, children_of);
  MarkupWriter writer(translation, elements, words, escape);
  writer.Write(roots, placer.placements(), children_of, targets);
  return writer.Finish();  // the words after the last element, and what follows them
}

namespace {
constexpr char kMarkerBegin = '\x01', kMarkerEnd = '\x02';
}  // namespace

std::string node_marker(char kind, size_t node) {
  return kind == 'c' ? std::string{kMarkerBegin, 'c', kMarkerEnd}
                     : absl::StrCat(std::string(1, kMarkerBegin), std::string(1, kind), node,
                                    std::string(1, kMarkerEnd));
}

std::string without_node_markers(absl::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c != kMarkerBegin && c != kMarkerEnd) out += c;
  }
  return out;
}

void for_each_placed_piece(const std::string& placed,
                           const std::function<void(absl::string_view)>& on_text,
                           const std::function<void(char kind, size_t node)>& on_marker) {
  size_t at = 0;
  while (at < placed.size()) {
    const size_t begin = placed.find(kMarkerBegin, at);
    const absl::string_view text = absl::string_view(placed).substr(
        at, begin == std::string::npos ? std::string::npos : begin - at);
    if (!text.empty()) on_text(text);
    if (begin == std::string::npos) break;
    const size_t end = placed.find(kMarkerEnd, begin);
    if (end == std::string::npos) break;  // markers are whole; nothing follows a cut one
    size_t node = 0;
    for (size_t i = begin + 2; i < end; ++i) node = node * 10 + (placed[i] - '0');
    on_marker(placed[begin + 1], node);
    at = end + 1;
  }
}

int add_marked_element(std::vector<InlineElement>& elements, size_t at, char kind, int parent) {
  const int index = static_cast<int>(elements.size());
  InlineElement& element = elements.emplace_back();
  element.span = {at, at};
  element.open = node_marker(kind, static_cast<size_t>(index));
  element.parent = parent;
  return index;
}

std::string place_node_markers(const std::string& source, const std::string& translation,
                               const std::vector<InlineElement>& elements,
                               const WordLinks& links) {
  if (elements.empty()) return without_node_markers(translation);
  return place_inline_markup(source, translation, elements, links, without_node_markers);
}

}  // namespace xlate
