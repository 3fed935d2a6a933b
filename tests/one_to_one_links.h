// Word links for markup tests: word i of a source linked to word i of its "translation" (the
// tests' translations keep the source's word order).
#pragma once

#include <algorithm>
#include <string>

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

}  // namespace xlate
