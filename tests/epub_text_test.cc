// EpubText (document/epub_text.h): an e-book's content documents found through its package
// document, translated in reading order as HTML, and an archive that comes back with every
// other entry as it was.
#include "document/epub_text.h"

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "tests/one_to_one_links.h"
#include "tests/zip_entries.h"

namespace xlate {
namespace {

constexpr char kContainerXml[] =
    "<?xml version=\"1.0\"?><container version=\"1.0\" "
    "xmlns=\"urn:oasis:names:tc:opendocument:xmlns:container\"><rootfiles><rootfile "
    "full-path=\"OEBPS/content.opf\" media-type=\"application/oebps-package+xml\"/>"
    "</rootfiles></container>";

// The spine reads chapter 2 (in a subfolder, its name escaped) before chapter 1; the navigation
// document is in the manifest only; the style sheet is not a content document.
constexpr char kPackage[] =
    "<?xml version=\"1.0\"?><package xmlns=\"http://www.idpf.org/2007/opf\" version=\"3.0\">"
    "<metadata/><manifest>"
    "<item id=\"nav\" href=\"nav.xhtml\" media-type=\"application/xhtml+xml\" "
    "properties=\"nav\"/>"
    "<item id=\"c1\" href=\"chapter1.xhtml\" media-type=\"application/xhtml+xml\"/>"
    "<item id=\"c2\" href=\"text/chapter%202.xhtml\" media-type=\"application/xhtml+xml\"/>"
    "<item id=\"css\" href=\"style.css\" media-type=\"text/css\"/>"
    "</manifest><spine><itemref idref=\"c2\"/><itemref idref=\"c1\"/></spine></package>";

std::string xhtml(const std::string& body) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<html "
         "xmlns=\"http://www.w3.org/1999/xhtml\"><head><title>T</title></head><body>" +
         body + "</body></html>";
}

std::map<std::string, std::string> epub_entries() {
  return {{"mimetype", "application/epub+zip"},
          {"META-INF/container.xml", kContainerXml},
          {"OEBPS/content.opf", kPackage},
          {"OEBPS/nav.xhtml", xhtml("<nav><ol><li><a href=\"chapter1.xhtml\">Start</a></li></ol>"
                                    "</nav>")},
          {"OEBPS/chapter1.xhtml", xhtml("<p>The <em>dog</em> runs.</p><br/>")},
          {"OEBPS/text/chapter 2.xhtml", xhtml("<h1>Second part</h1>")},
          {"OEBPS/style.css", "p { margin: 0 }"}};
}

TEST(EpubText, ContentDocumentsAreTranslatedInReadingOrder) {
  const std::map<std::string, std::string> entries = epub_entries();
  auto epub = EpubText::Parse(make_archive(entries));
  ASSERT_TRUE(epub.ok()) << epub.status();
  EXPECT_EQ(epub->parts(), (std::vector<std::string>{"OEBPS/text/chapter 2.xhtml",
                                                     "OEBPS/chapter1.xhtml", "OEBPS/nav.xhtml"}));
  EXPECT_EQ(epub->texts(), (std::vector<std::string>{"T", "Second part", "T", "The dog runs.",
                                                     "T", "Start"}));
  std::vector<std::string> translations;
  std::vector<WordLinks> links;
  for (const std::string& text : epub->texts()) {
    std::string upper = text;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    translations.push_back(upper);
    links.push_back(one_to_one(text, upper));
  }
  const std::string rebuilt = epub->Rebuild(translations, links);
  // The inline tag on its word; every byte outside the text as it was (the self-closed <br/>,
  // the declaration).
  EXPECT_EQ(read_entry(rebuilt, "OEBPS/chapter1.xhtml"),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<html "
            "xmlns=\"http://www.w3.org/1999/xhtml\"><head><title>T</title></head><body><p>THE "
            "<em>DOG</em> RUNS.</p><br/></body></html>");
  EXPECT_NE(read_entry(rebuilt, "OEBPS/text/chapter 2.xhtml").find("<h1>SECOND PART</h1>"),
            std::string::npos);
  for (const char* kept : {"mimetype", "META-INF/container.xml", "OEBPS/content.opf",
                           "OEBPS/style.css"}) {
    EXPECT_EQ(read_entry(rebuilt, kept), entries.at(kept)) << kept;
  }
}

TEST(EpubText, AnArchiveWithoutItsPackageIsRefusedByName) {
  std::map<std::string, std::string> entries = epub_entries();
  entries.erase("META-INF/container.xml");
  EXPECT_EQ(EpubText::Parse(make_archive(entries)).status().message(),
            "not an EPUB: the archive has no META-INF/container.xml");
  entries = epub_entries();
  entries.erase("OEBPS/content.opf");
  EXPECT_EQ(EpubText::Parse(make_archive(entries)).status().message(),
            "not an EPUB: the archive has no OEBPS/content.opf");
  entries = epub_entries();
  entries["META-INF/container.xml"] = "<container/>";
  EXPECT_TRUE(absl::StrContains(EpubText::Parse(make_archive(entries)).status().message(),
                                "names no package document"));
}

}  // namespace
}  // namespace xlate
