// Which words of a translation go with which words of its source, read from an alignment's
// cross-attention weights (engine/alignment.h): what puts a source span's inline markup back on
// the right words of the translation (document/inline_markup.h).
//
// A word is a run of characters other than white space (Unicode White_Space), in the source and
// in the translation alike; SentencePiece cuts text on white space too, so its pieces' words
// ("▁" starts one) are the text's words in order. Attention is summed over the pieces of each
// pair of words (averaged over the target word's pieces), and each source word is linked to the
// target word that attends it most. Target words that no source word picks (articles, which
// attend to their noun) stay unlinked: on Multi30k val this put a one-word tag on exactly the
// word's translation in 98 % of 50 sentences, against 88 % when each target word was also linked
// to the source word it attends most (bench/html_tags.py --split val).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace xlate {

struct ByteRange {
  size_t begin = 0, end = 0;  // [begin, end) bytes
};

struct WordLinks {
  std::vector<ByteRange> source_words, target_words;  // in text order
  std::vector<std::pair<int, int>> links;             // (source word, target word), sorted, unique
};

// One sentence and its translation, as an alignment labels them.
struct AlignedSentence {
  std::string source, target;
  // SentencePiece pieces of each side ("▁" starts a word); the source's without its end token.
  std::vector<std::string> source_pieces, target_pieces;
  // [target_pieces, source_pieces + 1]: row t is target piece t's attention over the source
  // pieces and the end token (whose column is ignored). Empty: no links (the words still count).
  std::vector<float> weights;
  // Glossary terms the sentence was constrained with (document/glossary_terms.h): the source term
  // as the sentence has it, and its target. The words of the term's n-th occurrence in the
  // source are linked to those of its target's n-th occurrence in the translation, whatever
  // the attention says (a word the search forced need not attend its source word), and to no
  // other; a term whose target the translation does not hold keeps the attention's links.
  std::vector<std::pair<std::string, std::string>> terms;
};

// The words of `text` (byte ranges of valid UTF-8; a malformed byte counts as a word character).
std::vector<ByteRange> words_of(const std::string& text);

// The links of one sentence. When a side's pieces make more or fewer words than its text has (a
// language token piece, a normaliser that changed the spacing), piece word k stands for text
// word k * words / piece words.
WordLinks link_words(const AlignedSentence& sentence);

// Adds the links of a part of a text (its source at byte source_offset of whole's source, its
// target at target_offset of whole's target) to `whole`, whose words are the whole texts'. A
// link whose word does not start a word of the whole (a part that cuts a word) is left out.
void add_links(WordLinks& whole, const WordLinks& part, size_t source_offset,
               size_t target_offset);

// The links of a text and its translation, made of its sentences' in order: each sentence's
// source is found in `text` and its target in `translation` after the previous one's (both are
// verbatim substrings: document/text_segments.h joins translations that way). A sentence that
// cannot be found is left out (its words stay unlinked).
WordLinks link_text_words(const std::string& text, const std::string& translation,
                          const std::vector<AlignedSentence>& sentences);

}  // namespace xlate
