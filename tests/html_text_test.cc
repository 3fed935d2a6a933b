// HtmlText (engine/html_text.h): which text of an HTML document is translated, and the rebuild
// that changes only those bytes.
#include "engine/html_text.h"

#include <gtest/gtest.h>

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

TEST(HtmlText, TextRunsAreReplacedAndEveryOtherByteStays) {
  const std::string source =
      "<p class=\"intro\">Hello <b>dear</b> reader,\n  welcome!</p><!-- a comment -->"
      "<img alt=\"a cat\" src=x.png><br/>  <a href='/x' title=\"t\">Fish &amp; chips</a>";
  auto html = HtmlText::Parse(source);
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_EQ(html->texts(), (std::vector<std::string>{"Hello", "dear", "reader,\n  welcome!",
                                                     "Fish & chips"}));
  EXPECT_EQ(html->Rebuild(upper(html->texts())),
            "<p class=\"intro\">HELLO <b>DEAR</b> READER,\n  WELCOME!</p><!-- a comment -->"
            "<img alt=\"a cat\" src=x.png><br/>  <a href='/x' title=\"t\">FISH &amp; CHIPS</a>");
}

TEST(HtmlText, CodeScriptsAndNoTranslateKeepTheirText) {
  const std::string source =
      "<div>Run <code>make all</code> now.<script>var a = \"x\";</script>"
      "<style>p { color: red }</style><pre>  keep  </pre>"
      "<span translate=\"no\">Acme <i>Corp</i></span><span class=\"x notranslate\">API</span>"
      "<textarea>typed</textarea>Done</div>";
  auto html = HtmlText::Parse(source);
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_EQ(html->texts(), (std::vector<std::string>{"Run", "now.", "Done"}));
  EXPECT_EQ(html->Rebuild({"Starte", "jetzt.", "Fertig"}),
            "<div>Starte <code>make all</code> jetzt.<script>var a = \"x\";</script>"
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
  EXPECT_EQ(html->Rebuild({"Tom & Jerry", "a < b"}),
            "<!DOCTYPE html><html><head><title>Tom &amp; Jerry</title></head>"
            "<body>\n<p>a &lt; b</p>\n</body></html>");
  // Plain text is a document of one run; broken markup parses as a browser reads it.
  EXPECT_EQ(HtmlText::Parse("just text")->texts(), std::vector<std::string>{"just text"});
  EXPECT_EQ(HtmlText::Parse("<p>open <b>bold")->texts(),
            (std::vector<std::string>{"open", "bold"}));
  EXPECT_TRUE(HtmlText::Parse("")->texts().empty());
  EXPECT_THROW(HtmlText::Parse("<p>x</p>")->Rebuild({}), std::logic_error);
}

}  // namespace
}  // namespace xlate
