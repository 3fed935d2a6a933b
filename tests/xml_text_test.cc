// XmlText (document/xml_text.h): which text of an XML document is translated, what the rebuild
// keeps, and malformed documents refused with their position.
#include "document/xml_text.h"

#include <gtest/gtest.h>

#include "tests/one_to_one_links.h"

namespace xlate {
namespace {

TEST(XmlText, BlocksAreTranslatedWholeAndTheStructureStays) {
  const std::string source =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<doc lang=\"en\"><!-- note --><title>Hello <b>dear</b> reader</title>\n"
      "  <p id=\"x\">Fish &amp; chips<![CDATA[ raw <code> ]]></p>"
      "<p translate=\"no\">Acme <i>Corp</i></p>"
      "<p xmlns:its=\"http://www.w3.org/2005/11/its\" its:translate=\"no\">API</p><?pi data?></doc>\n";
  auto xml = XmlText::Parse(source);
  ASSERT_TRUE(xml.ok()) << xml.status();
  EXPECT_EQ(xml->texts(), (std::vector<std::string>{"Hello dear reader", "Fish & chips"}));
  EXPECT_TRUE(xml->needs_word_links());
  const std::vector<std::string> translations = {"HALLO LIEBER LESER & <ok>", "FISCH & POMMES"};
  EXPECT_EQ(xml->Rebuild(translations, {one_to_one(xml->texts()[0], translations[0]),
                                        one_to_one(xml->texts()[1], translations[1])}),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<doc lang=\"en\"><!-- note --><title>HALLO <b>LIEBER</b> LESER &amp; &lt;ok&gt;"
            "</title>\n"
            "  <p id=\"x\">FISCH &amp; POMMES<![CDATA[ raw <code> ]]></p>"
            "<p translate=\"no\">Acme <i>Corp</i></p>"
            "<p xmlns:its=\"http://www.w3.org/2005/11/its\" its:translate=\"no\">API</p>"
            "<?pi data?></doc>\n");
  EXPECT_THROW(xml->Rebuild(translations, {}), std::logic_error);
}

TEST(XmlText, NestedAndKeptInlineElementsGoBackOnTheirWords) {
  const std::string source =
      "<steps>\n  <step n=\"1\">\n    Press <b>Save <i>now</i></b> or "
      "<kbd translate=\"no\">Ctrl+S</kbd>.\n  </step>\n</steps>";
  auto xml = XmlText::Parse(source);
  ASSERT_TRUE(xml.ok()) << xml.status();
  EXPECT_EQ(xml->texts(), std::vector<std::string>{"Press Save now or Ctrl+S."});
  const std::string translation = "Dr\u00fccke Save jetzt oder Ctrl+S.";
  // The white space around the block's content stays; the kept element's content replaces its
  // text, which the translation has verbatim.
  EXPECT_EQ(xml->Rebuild({translation}, {one_to_one(xml->texts()[0], translation)}),
            "<steps>\n  <step n=\"1\">\n    Dr\u00fccke <b>Save <i>jetzt</i></b> oder "
            "<kbd translate=\"no\">Ctrl+S</kbd>.\n  </step>\n</steps>");
}

TEST(XmlText, ADocumentWithoutADeclarationGetsNone) {
  auto xml = XmlText::Parse("<note>Hi</note>");
  ASSERT_TRUE(xml.ok()) << xml.status();
  EXPECT_EQ(xml->Rebuild({"Hallo"}, {}), "<note>Hallo</note>");
}

TEST(XmlText, MalformedDocumentsAreRefusedNamingThePosition) {
  for (const auto& [source, expected] : std::vector<std::pair<std::string, std::string>>{
           {"<a><b>text</a>", "line 1 column"},
           {"<a>\n  <b x=1/></a>", "line 2 column"},
           {"plain text", "line 1"},
           {"", "not"},
           {"<a>&undefined;</a>", "undefined"},
       }) {
    auto xml = XmlText::Parse(source);
    ASSERT_FALSE(xml.ok()) << source;
    EXPECT_EQ(xml.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(xml.status().message().find(expected), std::string::npos)
        << source << ": " << xml.status().message();
  }
}

}  // namespace
}  // namespace xlate
