// The `13a` tokenizer of sacreBLEU: the tokenisation of WMT's mteval-v13a.pl, which sacreBLEU
// applies to detokenised text before it counts n-grams. In order:
//   1. remove "<skipped>", join "-\n" line breaks, turn other "\n" into spaces;
//   2. unescape &quot; &amp; &lt; &gt; (in that order, each over the whole line);
//   3. put spaces around every ASCII symbol in { | } ~ [ \ ] ^ _ ` ! " # $ % & ( ) * + : ; < = >
//      ? @ /  (not around ' - . ,);
//   4. split off a period or comma unless it is between digits: "x." "x," ".x" ",x" are split,
//      "3.5" and "1,000" are kept; a dash after a digit is split ("5-" -> "5 -");
//   5. collapse whitespace (Python's definition, so U+00A0 separates words too).
// Steps 3-4 reproduce Python re.sub's left-to-right, non-overlapping matching exactly, so that
// "a.b.c" and runs like "..." tokenise as sacreBLEU does (docs/bleu.md).
#pragma once

#include <string>
#include <string_view>

namespace xlate::evaluation {

// The tokens of `line` (valid UTF-8) joined by single spaces, with no leading or trailing space.
std::string tokenize_13a(std::string_view line);

}  // namespace xlate::evaluation
