#include "evaluation/unicode_text.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace xlate::evaluation {
namespace {

TEST(UnicodeText, LowercasesGermanAndOtherLatinLetters) {
  EXPECT_EQ(lowercase("\u00c4\u00d6\u00dc \u1e9e STRASSE Stra\u00dfe"),
            "\u00e4\u00f6\u00fc \u00df strasse stra\u00dfe");
  EXPECT_EQ(lowercase("\u00c0\u00c9\u00ce\u00d5\u00db \u0178 \u0141 \u0150 \u0152"),
            "\u00e0\u00e9\u00ee\u00f5\u00fb \u00ff \u0142 \u0151 \u0153");
  EXPECT_EQ(lowercase("\u01c5 \u01c4 \u01c8"), "\u01c6 \u01c6 \u01c9");  // digraphs
}

TEST(UnicodeText, LowercasesCyrillicAndGreekLikePython) {
  EXPECT_EQ(lowercase("\u041f\u0420\u0418\u0412\u0415\u0422"),
            "\u043f\u0440\u0438\u0432\u0435\u0442");
  // Final sigma: ΟΔΟΣ -> οδος, ΣΟΦΟΣ. -> σοφος., a lone Σ -> σ, Σ before an apostrophe and a
  // letter -> σ.
  EXPECT_EQ(lowercase("\u039f\u0394\u039f\u03a3"), "\u03bf\u03b4\u03bf\u03c2");
  EXPECT_EQ(lowercase("\u03a3\u039f\u03a6\u039f\u03a3."), "\u03c3\u03bf\u03c6\u03bf\u03c2.");
  EXPECT_EQ(lowercase("\u03a3"), "\u03c3");
  EXPECT_EQ(lowercase("\u0391\u03a3'\u0391"), "\u03b1\u03c3'\u03b1");
}

TEST(UnicodeText, DottedCapitalIBecomesTwoCodePoints) {
  EXPECT_EQ(lowercase("\u0130stanbul"), "i\u0307stanbul");
}

TEST(UnicodeText, LeavesUncasedTextAlone) {
  EXPECT_EQ(lowercase("123 ,.;!? \u4e2d\u6587 \U0001F600"), "123 ,.;!? \u4e2d\u6587 \U0001F600");
}

TEST(UnicodeText, SplitsOnPythonWhitespace) {
  EXPECT_EQ(split_whitespace(" a\tb\u00a0c\u2028d\x1f" "e  "),
            (std::vector<std::string_view>{"a", "b", "c", "d", "e"}));
  EXPECT_TRUE(split_whitespace(" \u3000 ").empty());
  // U+200B (zero width space) is not whitespace for Python.
  EXPECT_EQ(split_whitespace("a\u200bb").size(), 1u);
}

TEST(UnicodeText, RstripRemovesTrailingUnicodeWhitespace) {
  EXPECT_EQ(rstrip_whitespace(" ab \u00a0\r"), " ab");
  EXPECT_EQ(rstrip_whitespace("\u00e4"), "\u00e4");
}

TEST(UnicodeText, RejectsInvalidUtf8WithItsOffset) {
  EXPECT_TRUE(check_utf8("Gr\u00fc\u00dfe \U0001F600").ok());
  const absl::Status truncated = check_utf8("ab\xc3");
  EXPECT_EQ(truncated.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(truncated.message(), "invalid UTF-8 at byte 2");
  EXPECT_FALSE(check_utf8("\xc0\xaf").ok());          // overlong '/'
  EXPECT_FALSE(check_utf8("\xed\xa0\x80").ok());      // surrogate U+D800
  EXPECT_FALSE(check_utf8("\xf4\x90\x80\x80").ok());  // past U+10FFFF
  EXPECT_FALSE(check_utf8("\x80").ok());              // stray continuation byte
}

TEST(UnicodeText, EncodesWhatItDecodes) {
  for (char32_t c : {U'A', U'\u00e4', U'\u20ac', U'\U0001F600'}) {
    std::string encoded;
    append_utf8(c, &encoded);
    size_t pos = 0;
    char32_t decoded = 0;
    ASSERT_TRUE(decode_utf8(encoded, &pos, &decoded));
    EXPECT_EQ(decoded, c);
    EXPECT_EQ(pos, encoded.size());
  }
}

}  // namespace
}  // namespace xlate::evaluation
