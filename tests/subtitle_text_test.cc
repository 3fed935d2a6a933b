// SubtitleText (document/subtitle_text.h): SubRip and WebVTT cues translated whole, written back
// on as many lines, with their tags on the aligned words and every other byte as it came.
#include "document/subtitle_text.h"

#include <gtest/gtest.h>

#include "tests/one_to_one_links.h"

namespace xlate {
namespace {

TEST(SubtitleText, SubRipCuesKeepTheirNumbersTimingsAndLines) {
  const std::string source =
      "1\r\n00:00:01,000 --> 00:00:04,000\r\nThe dog runs in the park\r\nand barks.\r\n\r\n"
      "2\r\n00:00:05,000 --> 00:00:06,500 X1:40 X2:600\r\n<i>A man is reading.</i>\r\n\r\n"
      "3\r\n00:00:07,000 --> 00:00:08,000\r\n\r\n";
  auto srt = SubtitleText::Parse(source, SubtitleFormat::kSubRip);
  ASSERT_TRUE(srt.ok()) << srt.status();
  EXPECT_EQ(srt->texts(), (std::vector<std::string>{"The dog runs in the park and barks.",
                                                    "A man is reading."}));
  EXPECT_TRUE(srt->needs_word_links());
  EXPECT_EQ(rebuild_upper(*srt),
            "1\r\n00:00:01,000 --> 00:00:04,000\r\nTHE DOG RUNS IN THE\r\nPARK AND BARKS.\r\n\r\n"
            "2\r\n00:00:05,000 --> 00:00:06,500 X1:40 X2:600\r\n<i>A MAN IS READING.</i>\r\n\r\n"
            "3\r\n00:00:07,000 --> 00:00:08,000\r\n\r\n");
}

TEST(SubtitleText, WebVttKeepsItsHeaderNotesAndEscapes) {
  const std::string source =
      "WEBVTT - a test\n\nNOTE written by hand\n\nSTYLE\n::cue { color: red }\n\n"
      "intro\n00:01.000 --> 00:04.000 align:start\n<v Bob>Fish &amp; chips</v>\n\n"
      "00:05.000 --> 00:06.000\nTwo <c.yellow>men</c> talk.\n";
  auto vtt = SubtitleText::Parse(source, SubtitleFormat::kWebVtt);
  ASSERT_TRUE(vtt.ok()) << vtt.status();
  EXPECT_EQ(vtt->texts(), (std::vector<std::string>{"Fish & chips", "Two men talk."}));
  EXPECT_EQ(rebuild_upper(*vtt),
            "WEBVTT - a test\n\nNOTE written by hand\n\nSTYLE\n::cue { color: red }\n\n"
            "intro\n00:01.000 --> 00:04.000 align:start\n<v Bob>FISH &amp; CHIPS</v>\n\n"
            "00:05.000 --> 00:06.000\nTWO <c.yellow>MEN</c> TALK.\n");
}

TEST(SubtitleText, ACueOfTagsAndSpacesAloneStaysAsItIs) {
  // The fuzzer's find: a cue whose tags hold white space alone once crashed the placement.
  const std::string source = "WEBVTT\n\n00:01.000 --> 00:02.000\n<v Bob></b></c></v> <00:01.000>\n";
  auto vtt = SubtitleText::Parse(source, SubtitleFormat::kWebVtt);
  ASSERT_TRUE(vtt.ok()) << vtt.status();
  EXPECT_TRUE(vtt->texts().empty());
  EXPECT_EQ(vtt->Rebuild({}, {}), source);
}

TEST(SubtitleText, FilesOfAnotherKindAreRefusedByName) {
  EXPECT_EQ(SubtitleText::Parse("1\n00:00:01,000\nHello\n", SubtitleFormat::kSubRip)
                .status()
                .message(),
            "not SubRip: the block at line 1 has no timing line (start --> end)");
  EXPECT_EQ(SubtitleText::Parse("1\n00:01.000 --> 00:02.000\nHello\n", SubtitleFormat::kWebVtt)
                .status()
                .message(),
            "not WebVTT: line 1 does not start with \"WEBVTT\"");
}

}  // namespace
}  // namespace xlate
