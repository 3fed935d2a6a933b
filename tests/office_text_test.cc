// OfficeText (document/office_text.h) and ZipArchive (document/zip_archive.h): which text of a Word
// document is translated, the runs' formatting on the aligned words, and an archive that comes
// back with every other entry as it was. tests/cli/test_docx.py translates a document that
// python-docx wrote, with the shipped model.
#include "document/office_text.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "tests/one_to_one_links.h"
#include "tests/zip_entries.h"

namespace xlate {
namespace {

constexpr char kWordNamespace[] =
    "xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\" "
    "xmlns:r=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships\"";

std::string document_xml(const std::string& body) {
  return absl::StrCat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<w:document ",
      kWordNamespace, "><w:body>", body, "<w:sectPr/></w:body></w:document>");
}

std::map<std::string, std::string> docx_entries(const std::string& body) {
  return {{"[Content_Types].xml", "<Types/>"},
          {"word/document.xml", document_xml(body)},
          {"word/styles.xml", "<w:styles/>"},
          {"word/media/image1.png", std::string("\x89PNG\r\n\x1a\n\0\0binary", 17)},
          {"docProps/core.xml", "<coreProperties/>"}};
}

// A "translation": the text upper-cased, its runs of spaces one space (as a model writes it).
std::string upper(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

// The document translated by upper-casing each paragraph, word for word.
std::string rebuild_upper(const OfficeText& docx) {
  std::vector<std::string> translations;
  std::vector<WordLinks> links;
  for (const std::string& text : docx.texts()) {
    translations.push_back(upper(text));
    links.push_back(one_to_one(text, translations.back()));
  }
  return docx.Rebuild(translations, links);
}

TEST(OfficeText, ParagraphsAreTranslatedWholeAndRunsKeepTheirFormatting) {
  const std::string body =
      "<w:p><w:pPr><w:jc w:val=\"center\"/></w:pPr>"
      "<w:r><w:t xml:space=\"preserve\">The </w:t></w:r>"
      "<w:r><w:rPr><w:b/></w:rPr><w:t>dog</w:t></w:r>"
      "<w:r><w:t xml:space=\"preserve\"> runs.</w:t></w:r></w:p>"
      "<w:p><w:r><w:t xml:space=\"preserve\">Visit our </w:t></w:r>"
      "<w:hyperlink r:id=\"rId9\"><w:r><w:rPr><w:u/></w:rPr><w:t>site</w:t></w:r></w:hyperlink>"
      "<w:r><w:t>.</w:t></w:r></w:p>"
      "<w:p><w:r><w:t>Name:</w:t><w:tab/><w:t>John</w:t></w:r></w:p>"
      "<w:p><w:r><w:t xml:space=\"preserve\">Page </w:t></w:r><w:fldSimple "
      "w:instr=\"PAGE\"><w:r><w:t>4</w:t></w:r></w:fldSimple><w:r><w:t xml:space=\"preserve\"> "
      "of the book</w:t></w:r></w:p>"
      "<w:p><w:pPr><w:pStyle w:val=\"Empty\"/></w:pPr></w:p>"
      "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>A cell</w:t></w:r>"
      "<w:bookmarkStart w:id=\"0\" w:name=\"x\"/><w:bookmarkEnd w:id=\"0\"/></w:p></w:tc></w:tr>"
      "</w:tbl>";
  const std::map<std::string, std::string> entries = docx_entries(body);
  auto docx = OfficeText::Parse(make_archive(entries), OfficeFormat::kDocx);
  ASSERT_TRUE(docx.ok()) << docx.status();
  // A tab parts words as a space does; the empty paragraph is no text.
  EXPECT_EQ(docx->texts(), (std::vector<std::string>{"The dog runs.", "Visit our site.",
                                                     "Name: John", "Page  of the book",
                                                     "A cell"}));
  EXPECT_EQ(docx->parts(), std::vector<std::string>{"word/document.xml"});
  const std::string rebuilt = rebuild_upper(*docx);
  const std::string xml = read_entry(rebuilt, "word/document.xml");
  // The bold run's formatting is on its word's translation, the paragraph's properties stay,
  // and text between runs takes the paragraph's common (plain) formatting.
  EXPECT_NE(xml.find("<w:p><w:pPr><w:jc w:val=\"center\"/></w:pPr><w:r><w:t "
                     "xml:space=\"preserve\">THE </w:t></w:r><w:r><w:rPr><w:b/></w:rPr><w:t "
                     "xml:space=\"preserve\">DOG</w:t></w:r><w:r><w:t xml:space=\"preserve\"> "
                     "RUNS.</w:t></w:r></w:p>"),
            std::string::npos)
      << xml;
  // The hyperlink goes around its word, with its run's formatting inside.
  EXPECT_NE(xml.find("r:id=\"rId9\"><w:r><w:rPr><w:u/></w:rPr><w:t xml:space=\"preserve\">SITE"
                     "</w:t></w:r></w:hyperlink>"),
            std::string::npos)
      << xml;
  // The tab stays between its words, in place of the space.
  EXPECT_NE(xml.find(">NAME:</w:t></w:r><w:r><w:tab"), std::string::npos) << xml;
  EXPECT_NE(xml.find("/></w:r><w:r><w:t xml:space=\"preserve\">JOHN</w:t>"), std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<w:p><w:pPr><w:pStyle w:val=\"Empty\"/></w:pPr></w:p>"), std::string::npos);
  // A field between words keeps a space on either side.
  EXPECT_NE(xml.find(">PAGE </w:t></w:r><w:fldSimple w:instr=\"PAGE\"><w:r><w:t>4</w:t></w:r>"
                     "</w:fldSimple><w:r><w:t xml:space=\"preserve\"> OF THE BOOK</w:t>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("A CELL"), std::string::npos);
  EXPECT_NE(xml.find("w:bookmarkStart"), std::string::npos);
  // Every other entry byte for byte, in the same order.
  auto out = ZipArchive::Open(rebuilt);
  ASSERT_TRUE(out.ok()) << out.status();
  auto in = ZipArchive::Open(make_archive(entries));
  EXPECT_EQ(out->names(), in->names());
  for (const auto& [name, data] : entries) {
    if (name != "word/document.xml") {
      EXPECT_EQ(read_entry(rebuilt, name), data) << name;
    }
  }
}

TEST(OfficeText, HeadersFootersAndNotesAreTranslatedToo) {
  std::map<std::string, std::string> entries =
      docx_entries("<w:p><w:r><w:t>Body text</w:t></w:r></w:p>");
  const std::string part = absl::StrCat("<w:hdr ", kWordNamespace,
                                        "><w:p><w:r><w:t>Page header</w:t></w:r></w:p></w:hdr>");
  entries["word/header1.xml"] = part;
  entries["word/footnotes.xml"] =
      absl::StrReplaceAll(part, {{"hdr", "footnotes"}, {"Page header", "A note"}});
  entries["word/theme/header9.xml"] = part;  // not a part with paragraphs of the document
  auto docx = OfficeText::Parse(make_archive(entries), OfficeFormat::kDocx);
  ASSERT_TRUE(docx.ok()) << docx.status();
  EXPECT_EQ(docx->texts(), (std::vector<std::string>{"Body text", "A note", "Page header"}));
  const std::string rebuilt = rebuild_upper(*docx);
  EXPECT_NE(read_entry(rebuilt, "word/header1.xml").find("PAGE HEADER"), std::string::npos);
  EXPECT_NE(read_entry(rebuilt, "word/footnotes.xml").find("A NOTE"), std::string::npos);
  EXPECT_EQ(read_entry(rebuilt, "word/theme/header9.xml"), part);
}

TEST(OfficeText, SlidesAndTheirNotesAreTranslatedInSlideOrder) {
  const auto slide = [](const std::string& paragraphs) {
    return absl::StrCat(
        "<p:sld xmlns:a=\"http://schemas.openxmlformats.org/drawingml/2006/main\" "
        "xmlns:p=\"http://schemas.openxmlformats.org/presentationml/2006/main\"><p:cSld><p:spTree>"
        "<p:sp><p:txBody><a:bodyPr/>",
        paragraphs, "</p:txBody></p:sp></p:spTree></p:cSld></p:sld>");
  };
  const std::map<std::string, std::string> entries = {
      {"ppt/presentation.xml", "<p:presentation/>"},
      {"ppt/slides/slide10.xml", slide("<a:p><a:r><a:t>Last slide</a:t></a:r></a:p>")},
      {"ppt/slides/slide2.xml",
       slide("<a:p><a:pPr algn=\"ctr\"/><a:r><a:rPr lang=\"en-US\" b=\"1\"/><a:t>Big</a:t>"
             "</a:r><a:r><a:rPr lang=\"en-US\"/><a:t xml:space=\"preserve\"> news</a:t></a:r>"
             "<a:br><a:rPr lang=\"en-US\"/></a:br><a:r><a:rPr lang=\"en-US\"/><a:t>today</a:t>"
             "</a:r><a:endParaRPr lang=\"en-US\"/></a:p>")},
      {"ppt/notesSlides/notesSlide2.xml", slide("<a:p><a:r><a:t>Say hello</a:t></a:r></a:p>")},
      {"ppt/slideLayouts/slideLayout1.xml", slide("<a:p><a:r><a:t>Click to edit</a:t></a:r></a:p>")},
      {"ppt/media/image1.png", "\x89PNG"}};
  auto pptx = OfficeText::Parse(make_archive(entries), OfficeFormat::kPptx);
  ASSERT_TRUE(pptx.ok()) << pptx.status();
  // Slide 2 before slide 10, notes after the slides; layouts' prompts are not the user's text.
  EXPECT_EQ(pptx->parts(), (std::vector<std::string>{"ppt/slides/slide2.xml",
                                                      "ppt/slides/slide10.xml",
                                                      "ppt/notesSlides/notesSlide2.xml"}));
  EXPECT_EQ(pptx->texts(),
            (std::vector<std::string>{"Big news today", "Last slide", "Say hello"}));
  const std::string rebuilt = rebuild_upper(*pptx);
  const std::string xml = read_entry(rebuilt, "ppt/slides/slide2.xml");
  // The bold run's formatting on its word, the line break between its words, the paragraph's
  // properties first and its end properties last.
  EXPECT_NE(xml.find("<a:p><a:pPr algn=\"ctr\"/><a:r><a:rPr lang=\"en-US\" b=\"1\"/><a:t "
                     "xml:space=\"preserve\">BIG</a:t></a:r><a:r><a:rPr lang=\"en-US\"/><a:t "
                     "xml:space=\"preserve\"> NEWS</a:t></a:r><a:br><a:rPr lang=\"en-US\"/>"
                     "</a:br><a:r><a:rPr lang=\"en-US\"/><a:t xml:space=\"preserve\">TODAY</a:t>"
                     "</a:r><a:endParaRPr lang=\"en-US\"/></a:p>"),
            std::string::npos)
      << xml;
  EXPECT_EQ(read_entry(rebuilt, "ppt/slideLayouts/slideLayout1.xml"),
            entries.at("ppt/slideLayouts/slideLayout1.xml"));
  EXPECT_NE(read_entry(rebuilt, "ppt/notesSlides/notesSlide2.xml").find("SAY HELLO"),
            std::string::npos);
}

TEST(OfficeText, AWorkbooksSharedStringsAreItsCellText) {
  const std::map<std::string, std::string> entries = {
      {"xl/workbook.xml", "<workbook/>"},
      {"xl/worksheets/sheet1.xml", "<worksheet><c t=\"s\"><v>0</v></c></worksheet>"},
      {"xl/sharedStrings.xml",
       "<sst xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\" count=\"3\">"
       "<si><t>Total sales</t></si><si><r><rPr><b/></rPr><t>Net</t></r><r><t "
       "xml:space=\"preserve\"> income</t></r></si><si><t>2024</t></si></sst>"}};
  auto xlsx = OfficeText::Parse(make_archive(entries), OfficeFormat::kXlsx);
  ASSERT_TRUE(xlsx.ok()) << xlsx.status();
  EXPECT_EQ(xlsx->texts(), (std::vector<std::string>{"Total sales", "Net income", "2024"}));
  const std::string rebuilt = rebuild_upper(*xlsx);
  const std::string xml = read_entry(rebuilt, "xl/sharedStrings.xml");
  // Every string keeps its index (cells refer to them by it), plain or rich.
  EXPECT_NE(xml.find("<si><r><t xml:space=\"preserve\">TOTAL SALES</t></r></si><si><r><rPr><b/>"
                     "</rPr><t xml:space=\"preserve\">NET</t></r><r><t xml:space=\"preserve\"> "
                     "INCOME</t></r></si><si><r><t xml:space=\"preserve\">2024</t></r></si></sst>"),
            std::string::npos)
      << xml;
  EXPECT_EQ(read_entry(rebuilt, "xl/worksheets/sheet1.xml"),
            entries.at("xl/worksheets/sheet1.xml"));
  // A workbook without shared strings has no text to translate.
  auto numbers = OfficeText::Parse(make_archive({{"xl/workbook.xml", "<workbook/>"}}),
                                   OfficeFormat::kXlsx);
  ASSERT_TRUE(numbers.ok()) << numbers.status();
  EXPECT_TRUE(numbers->texts().empty());
}

TEST(OfficeText, WhatIsNotADocumentIsRefusedByName) {
  EXPECT_TRUE(absl::StartsWith(
      OfficeText::Parse("plain text", OfficeFormat::kDocx).status().message(),
      "not a ZIP archive"));
  auto no_document = OfficeText::Parse(make_archive({{"content.xml", "<a/>"}}), OfficeFormat::kDocx);
  EXPECT_EQ(no_document.status().message(),
            "not a Word document (.docx): the archive has no word/document.xml");
  EXPECT_EQ(OfficeText::Parse(make_archive({{"word/document.xml", "<a/>"}}), OfficeFormat::kPptx)
                .status()
                .message(),
            "not a PowerPoint presentation (.pptx): the archive has no ppt/presentation.xml");
  auto malformed = OfficeText::Parse(make_archive({{"word/document.xml", "<w:document>"}}), OfficeFormat::kDocx);
  ASSERT_FALSE(malformed.ok());
  EXPECT_TRUE(absl::StartsWith(malformed.status().message(), "word/document.xml: not well-formed"))
      << malformed.status();
}

TEST(OfficeText, AnEncryptedOrDamagedPartIsRefusedByName) {
  std::string archive = make_archive(docx_entries("<w:p><w:r><w:t>Hello</w:t></w:r></w:p>"));
  // Marks every entry encrypted (bit 0 of the general-purpose flags, in the local and the
  // central headers), as a password-protected archive has it.
  std::string encrypted = archive;
  const std::string local("PK\x03\x04", 4), central("PK\x01\x02", 4);
  for (const std::string& signature : {local, central}) {
    const size_t flags_at = signature[2] == '\x03' ? 6 : 8;
    for (size_t at = encrypted.find(signature); at != std::string::npos;
         at = encrypted.find(signature, at + 4)) {
      encrypted[at + flags_at] = static_cast<char>(encrypted[at + flags_at] | 1);
    }
  }
  auto refused = OfficeText::Parse(encrypted, OfficeFormat::kDocx);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("is encrypted"), absl::string_view::npos)
      << refused.status();
  // A damaged deflate stream: the bytes of the document's entry overwritten.
  std::string damaged = archive;
  const size_t entry = damaged.find("word/document.xml");
  for (size_t i = entry + 17; i < entry + 57 && i < damaged.size(); ++i) damaged[i] = '\x55';
  EXPECT_FALSE(OfficeText::Parse(damaged, OfficeFormat::kDocx).ok());
}

TEST(OfficeText, APartThatInflatesPastTheLimitIsRefused) {
  // 65 MiB of zeros deflate to about 64 KB: a ZIP bomb in miniature.
  const std::string huge(ZipArchive::kMaxPartBytes + (1 << 20), ' ');
  auto bomb = OfficeText::Parse(make_archive({{"word/document.xml", huge}}), OfficeFormat::kDocx);
  ASSERT_FALSE(bomb.ok());
  EXPECT_EQ(bomb.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bomb.status().message().find("the limit for one part"), absl::string_view::npos)
      << bomb.status();
}

}  // namespace
}  // namespace xlate
