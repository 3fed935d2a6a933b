// PlaceholderText (engine/placeholder_text.h): which parts of a format string are placeholders,
// the runs of text between them, and the rebuild that keeps every placeholder's bytes.
#include "engine/placeholder_text.h"

#include <memory>

#include <gtest/gtest.h>

namespace xlate {
namespace {

std::vector<std::string> bracketed(const std::vector<std::string>& texts) {
  std::vector<std::string> out;
  for (const std::string& text : texts) out.push_back("[" + text + "]");
  return out;
}

TEST(PlaceholderText, EveryKindPassesThroughAndTheTextAroundItIsTranslated) {
  const PlaceholderText text(
      "Hello {name}, you have {0} new {{kind}} messages from ${sender}: %s (%d, %1$s, "
      "%(count)s, %-5.2f, %%) and {count, plural, one {# file} other {# files}}.");
  EXPECT_EQ(text.placeholders(),
            (std::vector<std::string>{"{name}", "{0}", "{{kind}}", "${sender}", "%s", "%d",
                                      "%1$s", "%(count)s", "%-5.2f", "%%",
                                      "{count, plural, one {# file} other {# files}}"}));
  EXPECT_EQ(text.texts(), (std::vector<std::string>{"Hello", ", you have", "new", "messages from",
                                                    ":", "(", ",", ",", ",", ",", ") and",
                                                    "."}));
  EXPECT_EQ(text.Rebuild(bracketed(text.texts()), {}),
            "[Hello] {name}[, you have] {0} [new] {{kind}} [messages from] ${sender}[:] %s [(]%d[,] "
            "%1$s[,] %(count)s[,] %-5.2f[,] %%[) and] {count, plural, one {# file} other "
            "{# files}}[.]");
}

TEST(PlaceholderText, ProseIsNotAPlaceholder) {
  // An unmatched brace, a percent sign before a space or a word, a lone dollar.
  const PlaceholderText text("50 % off { not closed, 100%, $5 and 20%.");
  EXPECT_TRUE(text.placeholders().empty());
  EXPECT_EQ(text.texts(), (std::vector<std::string>{"50 % off { not closed, 100%, $5 and 20%."}));
}

TEST(PlaceholderText, OnlyPlaceholdersAndWhitespaceLeaveNothingToTranslate) {
  const PlaceholderText text("  {a} %s\n{b}  ");
  EXPECT_TRUE(text.texts().empty());
  EXPECT_EQ(text.Rebuild({}, {}), "  {a} %s\n{b}  ");
  EXPECT_THROW(text.Rebuild({"x"}, {}), std::logic_error);
}

// An outer document of two runs (a stand-in for HTML's text runs): the placeholders inside each
// run are kept, the text around them translated, and the outer document rebuilt around that.
class TwoRuns : public TextRuns {
 public:
  const std::vector<std::string>& texts() const override { return texts_; }
  std::string Rebuild(const std::vector<std::string>& translations,
                      const std::vector<WordLinks>& /*links*/) const override {
    return "<p>" + translations.at(0) + "</p><p>" + translations.at(1) + "</p>";
  }

 private:
  std::vector<std::string> texts_ = {"Hi {name}, welcome", "%d files"};
};

TEST(PlaceholdersWithin, KeepsThePlaceholdersOfEveryOuterRun) {
  const PlaceholdersWithin text(std::make_unique<TwoRuns>());
  EXPECT_EQ(text.texts(), (std::vector<std::string>{"Hi", ", welcome", "files"}));
  EXPECT_EQ(text.Rebuild(bracketed(text.texts()), {}),
            "<p>[Hi] {name}[, welcome]</p><p>%d [files]</p>");
  EXPECT_THROW(text.Rebuild({"x"}, {}), std::logic_error);
}

}  // namespace
}  // namespace xlate
