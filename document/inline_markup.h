// Inline markup put back on a translation: the <b>, <a href>, <code> ... of a paragraph, whose
// text was translated as one piece, placed around the words of the translation that the word
// links (document/word_links.h) tie to the words the element enclosed in the source. What a
// sentence means does not change with its markup, so translating the paragraph whole and
// placing the markup afterwards keeps the translation as good as plain text's, where
// translating the runs between tags one by one breaks sentences apart.
//
//   source  "A <b>girl</b> in a karate uniform."   text "A girl in a karate uniform."
//   target  "Ein Mädchen in einem Karateanzug."     link girl -> Mädchen
//   output  "Ein <b>Mädchen</b> in einem Karateanzug."
//
// The output is always well nested: an element's words lie within its parent's, and siblings
// do not overlap. Siblings follow their words in the translation's order, which may not be the
// source's ("because he <b>was</b> <i>tired</i>." -> "weil er <i>müde</i> <b>war</b>."); of
// two whose words overlap, the first in that order takes them and the other the words after
// them, or none. Punctuation the element did not hold in the source stays outside it. An element whose words have no link is placed
// where the words around it put it, with no words inside; an element enclosing every source
// word encloses every target word.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "engine/alignment.h"
#include "document/word_links.h"

namespace xlate {

struct InlineElement {
  // The bytes of the source text the element encloses. begin == end: an element without text
  // (<img>, a placeholder): it goes before the translation of the source word that starts
  // there, or after that of the word it ends or is inside of ("{name}" in "Hello{name},"), or
  // at the end of the translation when it follows the last word.
  ByteRange span;
  // Its markup, written verbatim around its words. An element with text and no close (HTML's
  // end tag left out) takes the words from its first to the end of its parent's.
  std::string open, close;
  // Set for an element whose content is not translated (<code>, translate="no"): this content
  // is written verbatim in place of its text in the translation: where the translation has
  // kept_text verbatim (models often copy code and names), else the target words linked to the
  // span's words.
  std::optional<std::string> kept_content;
  std::string kept_text;  // the span's text
  // An element without text: whether a space separated it from the text before it, and from
  // the text after it (a placeholder's spacing; document/placeholder_text.h). It is written after
  // the translation of the source word it was attached to or that ended right before it (with
  // the space before it), else before the translation of the word that followed it (with the
  // space after it).
  bool space_before = false, space_after = false;
  int parent = -1;  // the enclosing element's index in the list (an earlier one), -1: none
};

// The cross-attention whose word links place markup: the last decoder layer, its heads'
// average (bench/html_tags.py compares the layers on Multi30k val).
inline constexpr AlignmentOptions kMarkupAlignment{-1, -1};

// `translation` of the text `source` with `elements` placed around its words; the translation's own characters
// pass through `escape` (the markup's escaping, e.g. HTML's &, <, >). `elements` are in
// document order (a parent before its children; a child's span within its parent's). `links` are the links of the text the spans refer to and
// of `translation`.
std::string place_inline_markup(const std::string& source, const std::string& translation,
                                const std::vector<InlineElement>& elements,
                                const WordLinks& links,
                                std::string (*escape)(absl::string_view));

// Markers of a block's nodes in a translation placed by place_inline_markup
// (below), which writes them where the nodes go; the translation's own text
// never holds their control characters (without_node_markers, the placement's escape, drops
// them). 'o' N opens a copy of node N (the element and its attributes), 'c' closes the
// innermost, 'k' N is a copy of node N with all it holds.
std::string node_marker(char kind, size_t node = 0);
std::string without_node_markers(absl::string_view text);

// Appends an element whose markup is the node marker of kind `kind` for node number
// elements.size() (a reader keeps its nodes in the same order), its span empty at `at` (the
// block text's end so far), inside element `parent` (-1: none); returns its index.
int add_marked_element(std::vector<InlineElement>& elements, size_t at, char kind, int parent);

// place_inline_markup for a block whose elements' markup is node markers (none: the translation
// alone), escaping nothing but the markers' characters.
std::string place_node_markers(const std::string& source, const std::string& translation,
                               const std::vector<InlineElement>& elements,
                               const WordLinks& links);

// Walks a placed translation in order: the text between markers, and each marker's kind and
// node.
void for_each_placed_piece(const std::string& placed,
                           const std::function<void(absl::string_view)>& on_text,
                           const std::function<void(char kind, size_t node)>& on_marker);

}  // namespace xlate
