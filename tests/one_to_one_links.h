// Word links for markup tests: word i of a source linked to word i of its "translation" (the
// tests' translations keep the source's word order), and a document rebuilt from its texts
// uppercased, so that a test sees which bytes were translated.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "document/text_runs.h"
#include "document/word_links.h"

namespace xlate {

inline WordLinks one_to_one(const std::string& source, const std::string& target) {
  WordLinks links;
  links.source_words = words_of(source);
  links.target_words = words_of(target);
  for (size_t w = 0; w < std::min(links.source_words.size(), links.target_words.size()); ++w) {
    links.links.emplace_back(static_cast<int>(w), static_cast<int>(w));
  }
  return links;
}

// The document with each text replaced by itself uppercased, its markup placed by one_to_one
// links when it needs word links.
inline std::string rebuild_upper(const TextRuns& document) {
  std::vector<std::string> translations;
  std::vector<WordLinks> links;
  for (const std::string& text : document.texts()) {
    std::string upper = text;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    translations.push_back(upper);
    if (document.needs_word_links()) links.push_back(one_to_one(text, upper));
  }
  return document.Rebuild(translations, links);
}

}  // namespace xlate
