// The 13a tokenizer on tricky strings. Every expected value was checked against sacreBLEU 2.6.0
// (sacrebleu.tokenizers.tokenizer_13a.Tokenizer13a()(line.rstrip())).
#include "evaluation/tokenizer_13a.h"

#include <gtest/gtest.h>

namespace xlate::evaluation {
namespace {

TEST(Tokenizer13a, SplitsSentencePunctuation) {
  EXPECT_EQ(tokenize_13a("Hello, world!"), "Hello , world !");
  EXPECT_EQ(tokenize_13a("Über den Fluss: Äpfel; Öl? Straße!"),
            "Über den Fluss : Äpfel ; Öl ? Straße !");
}

TEST(Tokenizer13a, KeepsPeriodsAndCommasInsideNumbers) {
  EXPECT_EQ(tokenize_13a("It costs $1,000.50 (approx.) - or 3.5% less."),
            "It costs $ 1,000.50 ( approx . ) - or 3.5 % less .");
  EXPECT_EQ(tokenize_13a("x,y 1,2 a, b"), "x , y 1,2 a , b");
  // A period after a non-digit is split even when a digit follows (".5"), and a period before
  // a non-digit is split even after a digit ("5. ").
  EXPECT_EQ(tokenize_13a("U.S.A., e.g., 3.14, .5 and 5. Then"),
            "U . S . A . , e . g . , 3.14 , . 5 and 5 . Then");
}

TEST(Tokenizer13a, MatchesRegexScanningOnRunsOfPeriods) {
  EXPECT_EQ(tokenize_13a("a.b.c ... end."), "a . b . c . . . end .");
}

TEST(Tokenizer13a, SplitsADashOnlyAfterADigit) {
  EXPECT_EQ(tokenize_13a("The 1990s-era well-known 5-6 year-old plan"),
            "The 1990s-era well-known 5 - 6 year-old plan");
  EXPECT_EQ(tokenize_13a("2014-2015 -- em\u2014dash \u2013 en"),
            "2014 - 2015 -- em\u2014dash \u2013 en");
}

TEST(Tokenizer13a, UnescapesEntitiesInMtevalOrder) {
  EXPECT_EQ(tokenize_13a("He said &quot;no&quot; &amp; left &lt;quickly&gt;."),
            "He said \" no \" & left < quickly > .");
  // One replacement after the other: "&amp;lt;" becomes "&lt;" and then "<", but "&amp;quot;"
  // stays "&quot;" because &quot; was replaced before &amp;.
  EXPECT_EQ(tokenize_13a("&amp;lt;b&amp;gt; and &amp;quot;"), "< b > and & quot ;");
}

TEST(Tokenizer13a, SplitsAsciiQuotesButNotApostrophesOrUnicodeQuotes) {
  EXPECT_EQ(tokenize_13a("\"Quoted\" 'single' `back` \u00abguillemets\u00bb "
                         "\u201eG\u00e4nsef\u00fc\u00dfchen\u201c"),
            "\" Quoted \" 'single' ` back ` \u00abguillemets\u00bb "
            "\u201eG\u00e4nsef\u00fc\u00dfchen\u201c");
}

TEST(Tokenizer13a, SplitsEverySymbolOfTheMtevalClass) {
  EXPECT_EQ(tokenize_13a("email@example.com path/to/file [x] {y} ~z ^w _v |u \\t"),
            "email @ example . com path / to / file [ x ] { y } ~ z ^ w _ v | u \\ t");
}

TEST(Tokenizer13a, SkippedMarkersAndLineBreaks) {
  EXPECT_EQ(tokenize_13a("<skipped> text"), "text");
  EXPECT_EQ(tokenize_13a("trailing-\nline\nbreak"), "trailingline break");
}

TEST(Tokenizer13a, UnicodeWhitespaceSeparatesWords) {
  EXPECT_EQ(tokenize_13a("word\u00a0with\u2009spaces\u3000here"), "word with spaces here");
  EXPECT_EQ(tokenize_13a(""), "");
  EXPECT_EQ(tokenize_13a("   "), "");
}

}  // namespace
}  // namespace xlate::evaluation
