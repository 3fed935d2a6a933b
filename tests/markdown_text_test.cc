// MarkdownText (document/markdown_text.h): paragraphs and headings translated whole, their
// emphasis and links on the aligned words, code untranslated, rendered back by cmark.
#include "document/markdown_text.h"

#include <gtest/gtest.h>

#include "tests/one_to_one_links.h"

namespace xlate {
namespace {

TEST(MarkdownText, BlocksAreTranslatedWholeWithTheirInlineMarkup) {
  const std::string source =
      "# A day in the park\n\nThe *dog* runs to the [big tree](https://example.com \"T\").\n"
      "It is **very** happy.\n\n- Run `make all` now.\n- Fish\n\n```\ncode stays\n```\n";
  auto markdown = MarkdownText::Parse(source);
  ASSERT_TRUE(markdown.ok()) << markdown.status();
  EXPECT_EQ(markdown->texts(),
            (std::vector<std::string>{"A day in the park",
                                      "The dog runs to the big tree. It is very happy.",
                                      "Run make all now.", "Fish"}));
  EXPECT_EQ(rebuild_upper(*markdown),
            "# A DAY IN THE PARK\n\nTHE *DOG* RUNS TO THE [BIG TREE](https://example.com \"T\"). "
            "IT IS **VERY** HAPPY.\n\n  - RUN `make all` NOW.\n  - FISH\n\n``` \ncode stays\n"
            "```\n");
}

TEST(MarkdownText, DeepNestingIsRefusedByName) {
  const std::string deep = std::string(300, '>') + " quote\n";
  EXPECT_EQ(MarkdownText::Parse(deep).status().message(),
            "Markdown nested 302 deep; the limit is 256");
}

}  // namespace
}  // namespace xlate
