// Texts cut into sentences and joined again: separators, blank and control-only texts, and
// whole-text segmentation.
#include "document/text_segments.h"

#include <gtest/gtest.h>

namespace xlate {
namespace {

std::vector<std::string> upper_all(const std::vector<std::string>& sentences) {
  std::vector<std::string> out;
  for (std::string sentence : sentences) {
    for (char& c : sentence) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out.push_back("<" + sentence + ">");
  }
  return out;
}

TEST(SegmentedTexts, SplitsSentencesAndKeepsEverySeparator) {
  const std::string text = "  A dog runs. A cat sleeps?\n\n\tTwo men talk!  \r\nEnd";
  auto split = SegmentedTexts::Split({text}, "en", Segmentation::kSentences);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->sentences(),
            (std::vector<std::string>{"A dog runs.", "A cat sleeps?", "Two men talk!", "End"}));
  EXPECT_EQ(split->Join(0, upper_all(split->sentences())),
            "  <A DOG RUNS.> <A CAT SLEEPS?>\n\n\t<TWO MEN TALK!>  \r\n<END>");
  EXPECT_EQ(split->Join(0, split->sentences()), text);
}

// Words, and code points, as a model's tokens in the tests of SplitLongSentences.
int64_t word_count(absl::string_view text) {
  int64_t words = 0;
  bool in_word = false;
  for (char c : text) {
    if (c != ' ' && !in_word) ++words;
    in_word = c != ' ';
  }
  return words;
}

int64_t code_point_count(absl::string_view text) {
  int64_t count = 0;
  for (unsigned char byte : text) count += (byte & 0xC0) != 0x80;
  return count;
}

// A document's overlong sentence is cut at spaces into sentences that fit, the spaces kept as
// given, and the texts around it keep theirs.
TEST(SegmentedTexts, AnOverlongSentenceIsCutAtSpacesIntoSentencesThatFit) {
  auto split = SegmentedTexts::Split(
      {"Short one.", "one two three four  five six seven eight nine ten. Next one."}, "en",
      Segmentation::kSentences);
  ASSERT_TRUE(split.ok()) << split.status();
  split->SplitLongSentences(&word_count, 4);
  EXPECT_EQ(split->sentences(),
            (std::vector<std::string>{"Short one.", "one two three four", "five six seven eight",
                                      "nine ten.", "Next one."}));
  EXPECT_EQ(split->first_sentence(1), 1u);
  EXPECT_EQ(split->end_sentence(1), 5u);
  EXPECT_EQ(split->text_of(4), 1u);
  EXPECT_EQ(split->Join(1, {"<a>", "<b>", "<c>", "<d>"}), "<a>  <b> <c> <d>");
  EXPECT_EQ(split->Join(0, {"<x>"}), "<x>");
}

// A word longer than the limit on its own is cut between code points, never inside one.
TEST(SegmentedTexts, AWordLongerThanTheLimitIsCutBetweenCodePoints) {
  auto split = SegmentedTexts::Split({"abcdefgh", "äöüßé x"}, "en", Segmentation::kWholeText);
  ASSERT_TRUE(split.ok()) << split.status();
  split->SplitLongSentences(&code_point_count, 3);
  EXPECT_EQ(split->sentences(),
            (std::vector<std::string>{"abc", "def", "gh", "äöü", "ßé", "x"}));
  EXPECT_EQ(split->Join(1, split->sentences().size() == 6
                               ? std::vector<std::string>{"1", "2", "3"}
                               : std::vector<std::string>{}),
            "12 3");
}

// A text's translation so far (streaming): through sentence `last`, whose translation may be
// partial, with the separators before it; always a prefix of the whole Join.
TEST(SegmentedTexts, JoinThroughASentenceIsAPrefixOfTheJoin) {
  auto split = SegmentedTexts::Split({"  A dog runs. A cat sleeps.\n\nTwo men.\n"}, "en",
                                     Segmentation::kSentences);
  ASSERT_TRUE(split.ok()) << split.status();
  const std::vector<std::string> translations = {"Ein Hund rennt.", "Eine Katze schläft.",
                                                 "Zwei Männer."};
  EXPECT_EQ(split->Join(0, translations),
            "  Ein Hund rennt. Eine Katze schläft.\n\nZwei Männer.\n");
  EXPECT_EQ(split->JoinThrough(0, {""}, 0), "  ");
  EXPECT_EQ(split->JoinThrough(0, {"Ein Hund"}, 0), "  Ein Hund");
  EXPECT_EQ(split->JoinThrough(0, {"Ein Hund rennt.", "Eine"}, 1), "  Ein Hund rennt. Eine");
  EXPECT_EQ(split->JoinThrough(0, translations, 2),
            "  Ein Hund rennt. Eine Katze schläft.\n\nZwei Männer.");
}

TEST(SegmentedTexts, AbbreviationsAndDecimalsDoNotEndSentences) {
  auto split = SegmentedTexts::Split({"It costs 3.50 dollars. Mr. Smith agrees."}, "en",
                                     Segmentation::kSentences);
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(split->sentences(),
            (std::vector<std::string>{"It costs 3.50 dollars.", "Mr. Smith agrees."}));
}

TEST(SegmentedTexts, BlankTextsHaveNoSentences) {
  const std::vector<std::string> texts = {"", "   ", "\t\n \r", std::string(3, '\0'),
                                          "\u00a0\u2003", "A dog.", "\x01\x02"};
  auto split = SegmentedTexts::Split(texts, "en", Segmentation::kSentences);
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(split->sentences(), std::vector<std::string>{"A dog."});
  for (size_t i = 0; i < texts.size(); ++i) {
    const size_t count = split->end_sentence(i) - split->first_sentence(i);
    EXPECT_EQ(count, i == 5 ? 1u : 0u) << "text " << i;
    std::vector<std::string> translations(count, "Ein Hund.");
    EXPECT_EQ(split->Join(i, translations), i == 5 ? "Ein Hund." : texts[i]) << "text " << i;
  }
  EXPECT_EQ(split->text_of(0), 5u);
}

TEST(SegmentedTexts, PiecesWithoutLettersOrDigitsAreKeptNotTranslated) {
  const std::vector<std::string> texts = {".", "-", "?!", "\U0001F642", "A dog.\n-\nA cat.",
                                          "42", "\u00bfQu\u00e9?"};
  for (Segmentation segmentation : {Segmentation::kSentences, Segmentation::kWholeText}) {
    auto split = SegmentedTexts::Split(texts, "en", segmentation);
    ASSERT_TRUE(split.ok());
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(split->end_sentence(i), split->first_sentence(i)) << "text " << i;
      EXPECT_EQ(split->Join(i, {}), texts[i]);
    }
    EXPECT_EQ(split->end_sentence(5) - split->first_sentence(5), 1u);  // digits are words
    EXPECT_EQ(split->end_sentence(6) - split->first_sentence(6), 1u);
  }
  auto split = SegmentedTexts::Split(texts, "en", Segmentation::kSentences);
  ASSERT_TRUE(split.ok());
  // A line of "-" between two sentences is kept as it is, between their translations.
  const size_t first = split->first_sentence(4);
  ASSERT_EQ(split->end_sentence(4) - first, 2u);
  EXPECT_EQ(split->sentences()[first], "A dog.");
  EXPECT_EQ(split->Join(4, {"Ein Hund.", "Eine Katze."}), "Ein Hund.\n-\nEine Katze.");
}

TEST(SegmentedTexts, WholeTextSegmentationKeepsALineOneSentence) {
  auto split = SegmentedTexts::Split({"Mr. Smith runs. He is fast.", " ", "x"}, "en",
                                     Segmentation::kWholeText);
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(split->sentences(), (std::vector<std::string>{"Mr. Smith runs. He is fast.", "x"}));
  EXPECT_EQ(split->Join(1, {}), " ");
}

TEST(SegmentedTexts, RefusesInvalidUtf8AndBadLanguageCodes) {
  auto bad = SegmentedTexts::Split({"fine", "bad \xff byte"}, "en", Segmentation::kSentences);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("text 1 is not valid UTF-8"), std::string::npos);
  EXPECT_NE(bad.status().message().find("offset 4"), std::string::npos);
  EXPECT_FALSE(SegmentedTexts::Split({"x"}, "en_US", Segmentation::kSentences).ok());
}

TEST(CodePoints, CountsScalarValuesNotBytes) {
  EXPECT_EQ(count_code_points(""), 0);
  EXPECT_EQ(count_code_points("abc"), 3);
  EXPECT_EQ(count_code_points("Grüße \xF0\x9F\x90\x95"), 7);  // ü, ß: 2 bytes; the dog: 4
}

}  // namespace
}  // namespace xlate
