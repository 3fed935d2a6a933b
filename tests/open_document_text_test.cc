// OpenDocumentText (document/open_document_text.h): which paragraphs of an OpenDocument file are
// translated, their spans and links on the aligned words, and an archive that comes back with
// every other entry as it was.
#include "document/open_document_text.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "tests/one_to_one_links.h"
#include "tests/zip_entries.h"

namespace xlate {
namespace {

constexpr char kNamespaces[] =
    "xmlns:office=\"urn:oasis:names:tc:opendocument:xmlns:office:1.0\" "
    "xmlns:text=\"urn:oasis:names:tc:opendocument:xmlns:text:1.0\" "
    "xmlns:style=\"urn:oasis:names:tc:opendocument:xmlns:style:1.0\" "
    "xmlns:draw=\"urn:oasis:names:tc:opendocument:xmlns:drawing:1.0\" "
    "xmlns:xlink=\"http://www.w3.org/1999/xlink\"";

std::string content(const std::string& body) {
  return absl::StrCat("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<office:document-content ",
                      kNamespaces, "><office:body><office:text>", body,
                      "</office:text></office:body></office:document-content>");
}

std::string rebuild_upper(const OpenDocumentText& odf) {
  std::vector<std::string> translations;
  std::vector<WordLinks> links;
  for (const std::string& text : odf.texts()) {
    std::string upper = text;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    translations.push_back(upper);
    links.push_back(one_to_one(text, upper));
  }
  return odf.Rebuild(translations, links);
}

TEST(OpenDocumentText, ParagraphsAreTranslatedWholeWithTheirSpansAndLinks) {
  const std::string body =
      "<text:h text:outline-level=\"1\">A   day\n in the park</text:h>"
      "<text:p text:style-name=\"P1\">The <text:span text:style-name=\"T1\">dog</text:span> "
      "runs. See <text:a xlink:href=\"https://example.com\">our site</text:a>.</text:p>"
      "<text:p>Name:<text:tab/>John<text:s text:c=\"3\"/>Smith</text:p>"
      "<text:p>Page <text:page-number>4</text:page-number> of the book"
      "<text:note text:id=\"n1\"><text:note-citation>1</text:note-citation><text:note-body>"
      "<text:p>A note.</text:p></text:note-body></text:note></text:p>"
      "<text:p> </text:p>";
  const std::string styles = absl::StrCat(
      "<office:document-styles ", kNamespaces,
      "><office:styles><style:style style:name=\"T1\"/></office:styles><office:master-styles>"
      "<style:master-page style:name=\"Standard\"><style:header><text:p>Annual report</text:p>"
      "</style:header></style:master-page></office:master-styles></office:document-styles>");
  const std::map<std::string, std::string> entries = {
      {"mimetype", "application/vnd.oasis.opendocument.text"},
      {"content.xml", content(body)},
      {"styles.xml", styles},
      {"meta.xml", "<office:document-meta/>"},
      {"Pictures/1.png", "\x89PNG"}};
  auto odf = OpenDocumentText::Parse(make_archive(entries));
  ASSERT_TRUE(odf.ok()) << odf.status();
  EXPECT_EQ(odf->parts(), (std::vector<std::string>{"content.xml", "styles.xml"}));
  // White space collapsed; a tab and spaces part words; a field's text is kept, not translated;
  // the note's paragraph is one of its own.
  EXPECT_EQ(odf->texts(),
            (std::vector<std::string>{"A day in the park", "The dog runs. See our site.",
                                      "Name: John Smith", "Page of the book", "A note.",
                                      "Annual report"}));
  const std::string rebuilt = rebuild_upper(*odf);
  const std::string xml = read_entry(rebuilt, "content.xml");
  EXPECT_NE(xml.find("<text:p text:style-name=\"P1\">THE <text:span text:style-name=\"T1\">DOG"
                     "</text:span> RUNS. SEE <text:a xlink:href=\"https://example.com\">OUR SITE"
                     "</text:a>.</text:p>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<text:p>NAME:<text:tab/>JOHN<text:s text:c=\"3\"/>SMITH</text:p>"),
            std::string::npos)
      << xml;
  // The field keeps the spaces around it; the note travels with its paragraph, translated.
  EXPECT_NE(xml.find("PAGE <text:page-number>4</text:page-number> OF THE BOOK"), std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<text:note-body><text:p>A NOTE.</text:p></text:note-body>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<text:p> </text:p>"), std::string::npos) << xml;
  const std::string header = read_entry(rebuilt, "styles.xml");
  EXPECT_NE(header.find("<style:header><text:p>ANNUAL REPORT</text:p>"), std::string::npos);
  EXPECT_NE(header.find("<style:style style:name=\"T1\"/>"), std::string::npos);
  EXPECT_EQ(read_entry(rebuilt, "meta.xml"), entries.at("meta.xml"));
  EXPECT_EQ(read_entry(rebuilt, "mimetype"), entries.at("mimetype"));
}

TEST(OpenDocumentText, AnArchiveWithoutContentIsRefusedByName) {
  EXPECT_EQ(OpenDocumentText::Parse(make_archive({{"mimetype", "x"}})).status().message(),
            "not an OpenDocument file (.odt, .odp, .ods): the archive has no content.xml");
}

}  // namespace
}  // namespace xlate
