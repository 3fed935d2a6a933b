// PlaceholderText (document/placeholder_text.h): which parts of a format string are placeholders,
// the text without them, and the rebuild that puts every placeholder's bytes back in place.
#include "document/placeholder_text.h"

#include <cctype>

#include <gtest/gtest.h>

#include "document/html_text.h"
#include "document/xml_text.h"
#include "tests/one_to_one_links.h"

namespace xlate {
namespace {

std::string upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

// Rebuilds `text` with its text upper-cased word for word: the placeholders must come back
// exactly where they were.
std::string rebuild_upper(const PlaceholderText& text) {
  if (text.texts().empty()) return text.Rebuild({}, {});
  const std::string translation = upper(text.texts()[0]);
  return text.Rebuild({translation}, {one_to_one(text.texts()[0], translation)});
}

TEST(PlaceholderText, EveryKindIsTakenOutAndPutBackWhereItWas) {
  const std::string source =
      "Hello {name}, you have {0} new {{kind}} messages from ${sender}: %s (%d, %1$s, "
      "%(count)s, %-5.2f, %%) and {count, plural, one {# file} other {# files}}.";
  const PlaceholderText text(source);
  EXPECT_EQ(text.placeholders(),
            (std::vector<std::string>{"{name}", "{0}", "{{kind}}", "${sender}", "%s", "%d",
                                      "%1$s", "%(count)s", "%-5.2f", "%%",
                                      "{count, plural, one {# file} other {# files}}"}));
  // The model reads the sentence without them, whole.
  EXPECT_EQ(text.texts(),
            std::vector<std::string>{"Hello, you have new messages from: (,,,,) and."});
  EXPECT_TRUE(text.needs_word_links());
  EXPECT_EQ(rebuild_upper(text),
            "HELLO {name}, YOU HAVE {0} NEW {{kind}} MESSAGES FROM ${sender}: %s (%d, %1$s, "
            "%(count)s, %-5.2f, %%) AND {count, plural, one {# file} other {# files}}.");
}

TEST(PlaceholderText, APlaceholderGoesWhereTheTranslationPutsItsWord) {
  // Before the translation of the word that followed it, after that of the word it was
  // attached to.
  const PlaceholderText text("Delete {n} files from %s?");
  EXPECT_EQ(text.texts(), std::vector<std::string>{"Delete files from?"});
  const std::string translation = "Dateien aus l\u00f6schen?";
  WordLinks links;
  links.source_words = words_of(text.texts()[0]);
  links.target_words = words_of(translation);
  links.links = {{0, 2}, {1, 0}, {2, 1}};  // Delete -> löschen?, files -> Dateien, from? -> aus
  EXPECT_EQ(text.Rebuild({translation}, {links}), "{n} Dateien aus %s l\u00f6schen?");
}

TEST(PlaceholderText, ProseIsNotAPlaceholder) {
  // An unmatched brace, a percent sign before a space or a word, a lone dollar.
  const PlaceholderText text("50 % off { not closed, 100%, $5 and 20%.");
  EXPECT_TRUE(text.placeholders().empty());
  EXPECT_FALSE(text.needs_word_links());
  EXPECT_EQ(text.texts(), (std::vector<std::string>{"50 % off { not closed, 100%, $5 and 20%."}));
  EXPECT_EQ(text.Rebuild({"x"}, {}), "x");
}

TEST(PlaceholderText, OnlyPlaceholdersAndWhitespaceLeaveNothingToTranslate) {
  const PlaceholderText text("  {a} %s\n{b}  ");
  EXPECT_TRUE(text.texts().empty());
  EXPECT_EQ(text.Rebuild({}, {}), "  {a} %s\n{b}  ");
  EXPECT_THROW(text.Rebuild({"x"}, {}), std::logic_error);
  // White space around the text stays; so do placeholders at either end.
  EXPECT_EQ(rebuild_upper(PlaceholderText("  {a} two words %s\n")), "  {a} TWO WORDS %s\n");
}

TEST(PlaceholderText, InsideHtmlAndXmlTheyArePlacedWithTheInlineTags) {
  auto html = HtmlText::Parse("<p>Hello {name}, <b>you</b> have %d files.</p>",
                              /*keep_placeholders=*/true);
  ASSERT_TRUE(html.ok());
  EXPECT_EQ(html->texts(), std::vector<std::string>{"Hello, you have files."});
  const std::string translation = "HELLO, YOU HAVE FILES.";
  EXPECT_EQ(html->Rebuild({translation}, {one_to_one(html->texts()[0], translation)}),
            "<p>HELLO {name}, <b>YOU</b> HAVE %d FILES.</p>");
  auto xml = XmlText::Parse("<t>Hello {name}, <b>you</b> have %d files.</t>",
                            /*keep_placeholders=*/true);
  ASSERT_TRUE(xml.ok());
  EXPECT_EQ(xml->texts(), html->texts());
  EXPECT_EQ(xml->Rebuild({translation}, {one_to_one(xml->texts()[0], translation)}),
            "<t>HELLO {name}, <b>YOU</b> HAVE %d FILES.</t>");
}

// The QA round: <p><b>{name}</b></p> came back as <p><b></b></p>, and <b>%s</b> in XML as <b/>.
// A block of placeholders alone has nothing to translate and stays as it is.
TEST(PlaceholderText, MarkupAroundPlaceholdersAloneKeepsThem) {
  for (const std::string source :
       {"<p><b>{name}</b></p>", "<p>{name}<b>%s</b>{{x}}</p>", "<p><b>%s</b></p><p>Hi.</p>"}) {
    auto html = HtmlText::Parse(source, /*keep_placeholders=*/true);
    ASSERT_TRUE(html.ok()) << source;
    std::vector<std::string> translations;
    std::vector<WordLinks> links;
    for (const std::string& text : html->texts()) {
      translations.push_back(text);
      links.push_back(one_to_one(text, text));
    }
    EXPECT_EQ(html->Rebuild(translations, links), source);
  }
  for (const std::string source :
       {"<r><b>%s</b></r>", "<r><p>{name}<b>%s</b>{{x}}</p></r>"}) {
    auto xml = XmlText::Parse(source, /*keep_placeholders=*/true);
    ASSERT_TRUE(xml.ok()) << source;
    EXPECT_TRUE(xml->texts().empty()) << source;
    EXPECT_NE(xml->Rebuild({}, {}).find(source), std::string::npos) << xml->Rebuild({}, {});
  }
}

// The QA round: "Hello <b>%s</b> world." came back as "Hallo <b> %s</b>Welt.": the spaces
// around an element that holds a placeholder alone stay outside it, where the source had them.
TEST(PlaceholderText, AnElementHoldingAPlaceholderAloneKeepsItsSpacesOutside) {
  const std::pair<const char*, const char*> cases[] = {
      {"<p>Hello <b>%s</b> world.</p>", "<p>HALLO <b>%s</b> WELT.</p>"},
      {"<p>Hello <b><i>{name}</i></b> world.</p>", "<p>HALLO <b><i>{name}</i></b> WELT.</p>"},
      {"<p>Hello <b>%s</b></p>", "<p>HALLO <b>%s</b></p>"},
      {"<p>Hello <b>{n}</b> new <b>%d</b> files.</p>", "<p>HALLO <b>{n}</b> NEU <b>%d</b> DATEIEN.</p>"},
  };
  for (const auto& [source, expected] : cases) {
    auto html = HtmlText::Parse(source, /*keep_placeholders=*/true);
    ASSERT_TRUE(html.ok()) << source;
    ASSERT_EQ(html->texts().size(), 1u) << source;
    std::string translation = html->texts()[0];
    for (char& c : translation) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"HELLO", "HALLO"},
                                   {"WORLD", "WELT"}, {"NEW", "NEU"}, {"FILES", "DATEIEN"}}) {
      if (const size_t at = translation.find(from); at != std::string::npos) {
        translation.replace(at, from.size(), to);
      }
    }
    EXPECT_EQ(html->Rebuild({translation}, {one_to_one(html->texts()[0], translation)}), expected)
        << source << " read as \"" << html->texts()[0] << "\"";
  }
}

}  // namespace
}  // namespace xlate
