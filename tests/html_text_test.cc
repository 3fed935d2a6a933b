// HtmlText (document/html_text.h): which text of an HTML document is translated, and the rebuild
// that changes only those bytes.
#include "document/html_text.h"

#include <gtest/gtest.h>

#include "tests/one_to_one_links.h"

namespace xlate {
namespace {

std::vector<std::string> upper(const std::vector<std::string>& texts) {
  std::vector<std::string> out;
  for (std::string text : texts) {
    for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out.push_back(text);
  }
  return out;
}

// Rebuilds `html` with its texts upper-cased, word for word.
std::string rebuild_upper(const HtmlText& html) {
  const std::vector<std::string> translations = upper(html.texts());
  std::vector<WordLinks> links;
  for (size_t i = 0; i < translations.size(); ++i) {
    links.push_back(one_to_one(html.texts()[i], translations[i]));
  }
  return html.Rebuild(translations, links);
}

TEST(HtmlText, BlocksAreTranslatedWholeAndTheirInlineTagsPutBack) {
  const std::string source =
      "<p class=\"intro\">Hello <b>dear</b> reader,\n  welcome!</p><!-- a comment -->"
      "<img alt=\"a cat\" src=x.png><br/>  <a href='/x' title=\"t\">Fish &amp; chips</a>";
  auto html = HtmlText::Parse(source);
  ASSERT_TRUE(html.ok()) << html.status();
  // White space collapsed as a browser shows it; the image alone is no text.
  EXPECT_EQ(html->texts(),
            (std::vector<std::string>{"Hello dear reader, welcome!", "Fish & chips"}));
  EXPECT_TRUE(html->needs_word_links());
  EXPECT_EQ(rebuild_upper(*html),
            "<p class=\"intro\">HELLO <b>DEAR</b> READER, WELCOME!</p><!-- a comment -->"
            "<img alt=\"a cat\" src=x.png><br/>  <a href='/x' title=\"t\">FISH &amp; CHIPS</a>");
  // Nested inline elements, an image inside a sentence, a link around two sentences.
  const std::string nested =
      "<li><a href=\"#\"><em>Read <strong>this</strong></em> now.</a> Or <img src=i.png>"
      "later.</li><li>B&uuml;cher <span>und</span></li>";
  auto document = HtmlText::Parse(nested);
  ASSERT_TRUE(document.ok());
  EXPECT_EQ(document->texts(),
            (std::vector<std::string>{"Read this now. Or later.", "B\u00fccher und"}));
  EXPECT_EQ(rebuild_upper(*document),
            "<li><a href=\"#\"><em>READ <strong>THIS</strong></em> NOW.</a> OR <img src=i.png>"
            "LATER.</li><li>B\u00fcCHER <span>UND</span></li>");
}

TEST(HtmlText, CodeScriptsAndNoTranslateKeepTheirText) {
  const std::string source =
      "<div>Run <code>make &amp;&amp; all</code> now.<script>var a = \"x\";</script>"
      "<style>p { color: red }</style><pre>  keep  </pre>"
      "<span translate=\"no\">Acme <i>Corp</i></span><span class=\"x notranslate\">API</span>"
      "<textarea>typed</textarea>Done</div>";
  auto html = HtmlText::Parse(source);
  ASSERT_TRUE(html.ok()) << html.status();
  // The code's text is part of its sentence; a block of kept text only is not translated.
  EXPECT_EQ(html->texts(), (std::vector<std::string>{"Run make && all now.", "Done"}));
  const std::string translation = "Starte make && all jetzt.";
  EXPECT_EQ(html->Rebuild({translation, "Fertig"},
                          {one_to_one(html->texts()[0], translation),
                           one_to_one("Done", "Fertig")}),
            "<div>Starte <code>make &amp;&amp; all</code> jetzt.<script>var a = \"x\";</script>"
            "<style>p { color: red }</style><pre>  keep  </pre>"
            "<span translate=\"no\">Acme <i>Corp</i></span><span class=\"x notranslate\">API"
            "</span><textarea>typed</textarea>Fertig</div>");
}

TEST(HtmlText, TranslationsAreEscapedAndDocumentsKeepTheirShape) {
  const std::string source = "<!DOCTYPE html><html><head><title>Tom</title></head>"
                             "<body>\n<p>x</p>\n</body></html>";
  auto html = HtmlText::Parse(source);
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_EQ(html->texts(), (std::vector<std::string>{"Tom", "x"}));
  EXPECT_FALSE(html->needs_word_links());
  EXPECT_EQ(html->Rebuild({"Tom & Jerry", "a < b"}, {}),
            "<!DOCTYPE html><html><head><title>Tom &amp; Jerry</title></head>"
            "<body>\n<p>a &lt; b</p>\n</body></html>");
  EXPECT_EQ(HtmlText::Parse("just text")->texts(), std::vector<std::string>{"just text"});
  EXPECT_TRUE(HtmlText::Parse("")->texts().empty());
  EXPECT_THROW(HtmlText::Parse("<p>x</p>")->Rebuild({}, {}), std::logic_error);
  EXPECT_THROW(HtmlText::Parse("<p><b>x</b></p>")->Rebuild({"y"}, {}), std::logic_error);
}

TEST(HtmlText, BrokenMarkupIsRepairedAsBrowsersDo) {
  // A missing end tag stays missing: the browser ends the element (and reopens it in the next
  // paragraph) as it did in the source.
  auto open = HtmlText::Parse("<p>open <b>bold</p><p>next</p>");
  ASSERT_TRUE(open.ok());
  EXPECT_EQ(open->texts(), (std::vector<std::string>{"open bold", "next"}));
  EXPECT_EQ(rebuild_upper(*open), "<p>OPEN <b>BOLD</p><p>NEXT</p>");
  // A list after an unclosed <b> in a paragraph: the list ends the paragraph, and the parser
  // reopens the <b> in the item and after the list; those blocks go text node by text node.
  auto list_in_bold = HtmlText::Parse("<p>A <b>dog<ul><li>x <i>y</i></li></ul>tail {n}</b></p>",
                                      /*keep_placeholders=*/true);
  ASSERT_TRUE(list_in_bold.ok());
  EXPECT_EQ(list_in_bold->texts(), (std::vector<std::string>{"A dog", "x", "y", "tail"}));
  EXPECT_EQ(rebuild_upper(*list_in_bold),
            "<p>A <b>DOG<ul><li>X <i>Y</i></li></ul>TAIL {n}</b></p>");
  // Misnested tags, which the parser rearranges: each text node on its own, every tag kept.
  auto misnested = HtmlText::Parse("<p><b>one <i>two</b> three</i></p>");
  ASSERT_TRUE(misnested.ok());
  EXPECT_EQ(misnested->texts(), (std::vector<std::string>{"one", "two", "three"}));
  EXPECT_EQ(misnested->Rebuild({"eins", "zwei", "drei"}, {}),
            "<p><b>eins <i>zwei</b> drei</i></p>");
}

}  // namespace
// The QA round's crash: 20,000 nested <b> (60 KB) overflowed the stack of the walk, and below
// that depth Gumbo's error records took memory quadratic in it. Refused by name, quickly.
TEST(HtmlText, DeepNestingIsRefusedByName) {
  std::string deep;
  for (int i = 0; i < 20000; ++i) deep += "<b>";
  deep += "The dog runs.";
  auto html = HtmlText::Parse(deep);
  ASSERT_FALSE(html.ok());
  EXPECT_EQ(html.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(html.status().message().find("nested more than 256 deep"), std::string::npos)
      << html.status();
  // A body's worth (4 MiB) of start tags: refused before the parser sees them.
  std::string many;
  for (int i = 0; i < 1400000; ++i) many += "<b>";
  html = HtmlText::Parse(many);
  ASSERT_FALSE(html.ok());
  EXPECT_NE(html.status().message().find("1400000 start tags; the limit is 20000"),
            std::string::npos)
      << html.status();
}

// html is depth 1, body 2: 254 nested <b> reach the limit, one more passes it.
TEST(HtmlText, NestingUpToTheLimitIsTranslated) {
  const auto nested = [](int levels) {
    std::string text;
    for (int i = 0; i < levels; ++i) text += "<b>";
    text += "The dog runs.";
    for (int i = 0; i < levels; ++i) text += "</b>";
    return text;
  };
  auto html = HtmlText::Parse(nested(254));
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_EQ(html->texts(), std::vector<std::string>{"The dog runs."});
  EXPECT_EQ(rebuild_upper(*html), nested(254).replace(254 * 3, 13, "THE DOG RUNS."));
  EXPECT_FALSE(HtmlText::Parse(nested(255)).ok());
}

// Formatting elements left open are reopened in every later paragraph: 2,000 of them and 4,000
// paragraphs (53 KB) made Gumbo build a tree of 2.9 GB. The parse stops at its budget.
TEST(HtmlText, ReopenedFormattingElementsAreBoundedInMemory) {
  std::string text = "<p>";
  for (int i = 0; i < 2000; ++i) text += "<b id=" + std::to_string(i) + ">";
  for (int i = 0; i < 4000; ++i) text += "</p><p>x";
  auto html = HtmlText::Parse(text);
  ASSERT_FALSE(html.ok());
  EXPECT_NE(html.status().message().find("parse tree would take over"), std::string::npos)
      << html.status();
}

// A page at the start-tag limit, as pages are (paragraphs with inline elements), parses whole.
TEST(HtmlText, ALargePageWithinTheLimitsParses) {
  std::string page = "<!DOCTYPE html><html><head><title>Notes</title></head><body>";
  for (int i = 0; i < 6660; ++i) {
    page += "<p class=\"note\">Hello <b>dear</b> reader, this is note <a href=\"/n/" +
            std::to_string(i) + "\">number " + std::to_string(i) + "</a>.</p>\n";
  }
  page += "</body></html>";
  auto html = HtmlText::Parse(page);
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_EQ(html->texts().size(), 6661u);
  EXPECT_EQ(html->texts()[6660], "Hello dear reader, this is note number 6659.");
}

}  // namespace xlate
