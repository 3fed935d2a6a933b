// What the document fuzzers "translate" a document's texts into: each text's words in reverse
// order, linked word to word, the hardest order for placing nested markup.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "document/text_runs.h"
#include "document/word_links.h"

namespace xlate::fuzz {

// Rebuilds `document` from its texts reversed (links only when it needs them).
inline std::string rebuild_reversed(const TextRuns& document) {
  std::vector<std::string> translations;
  std::vector<WordLinks> links;
  for (const std::string& text : document.texts()) {
    const std::vector<ByteRange> words = words_of(text);
    std::string reversed;
    for (size_t i = words.size(); i-- > 0;) {
      reversed += text.substr(words[i].begin, words[i].end - words[i].begin);
      if (i > 0) reversed += ' ';
    }
    WordLinks link;
    link.source_words = words;
    link.target_words = words_of(reversed);
    const int n = static_cast<int>(std::min(words.size(), link.target_words.size()));
    for (int i = 0; i < n; ++i) link.links.emplace_back(i, n - 1 - i);
    std::sort(link.links.begin(), link.links.end());
    translations.push_back(std::move(reversed));
    links.push_back(std::move(link));
  }
  if (!document.needs_word_links()) links.clear();
  return document.Rebuild(translations, links);
}

}  // namespace xlate::fuzz
