// XmlText (engine/xml_text.h): which text of an XML document is translated, what the rebuild
// keeps, and malformed documents refused with their position.
#include "engine/xml_text.h"

#include <gtest/gtest.h>

namespace xlate {
namespace {

std::vector<std::string> bracketed(const std::vector<std::string>& texts) {
  std::vector<std::string> out;
  for (const std::string& text : texts) out.push_back("[" + text + "] & <ok>");
  return out;
}

TEST(XmlText, TextNodesAreReplacedAndTheStructureStays) {
  const std::string source =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<doc lang=\"en\"><!-- note --><title>Hello <b>dear</b> reader</title>\n"
      "  <p id=\"x\">Fish &amp; chips<![CDATA[ raw <code> ]]></p>"
      "<p translate=\"no\">Acme <i>Corp</i></p>"
      "<p xmlns:its=\"http://www.w3.org/2005/11/its\" its:translate=\"no\">API</p><?pi data?></doc>\n";
  auto xml = XmlText::Parse(source);
  ASSERT_TRUE(xml.ok()) << xml.status();
  EXPECT_EQ(xml->texts(), (std::vector<std::string>{"Hello", "dear", "reader", "Fish & chips"}));
  EXPECT_EQ(xml->Rebuild(bracketed(xml->texts()), {}),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<doc lang=\"en\"><!-- note --><title>[Hello] &amp; &lt;ok&gt; <b>[dear] &amp; "
            "&lt;ok&gt;</b> [reader] &amp; &lt;ok&gt;</title>\n"
            "  <p id=\"x\">[Fish &amp; chips] &amp; &lt;ok&gt;<![CDATA[ raw <code> ]]></p>"
            "<p translate=\"no\">Acme <i>Corp</i></p>"
            "<p xmlns:its=\"http://www.w3.org/2005/11/its\" its:translate=\"no\">API</p>"
            "<?pi data?></doc>\n");
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
