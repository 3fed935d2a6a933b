"""`xlate translate --input report.docx --output bericht.docx` on the default model, with a
document as python-docx writes it (styles, a header, a table, a picture, a hyperlink, bold and
italic runs, a tab): every paragraph translated, the runs' formatting on translated words, and
every entry of the archive but the translated parts byte for byte. A file that is not a .docx is
refused by name. A presentation as python-pptx writes it and a workbook as openpyxl writes it
come back the same way, and open in the library that wrote them, and so does an OpenDocument
text odfpy writes; an EPUB's chapters come back as well-formed XHTML; subtitles keep their cues'
numbers and timings, and Markdown its structure; a gettext catalogue polib writes comes back
with its untranslated messages filled in, their placeholders as msgfmt checks them, and every
other entry, comment, flag and context as it was.

Run by CTest; prints 'N passed, N failed' and exits non-zero on failure.
"""
import os
import struct
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ElementTree
import zipfile
import zlib

import docx
import ebooklib
import openpyxl
import polib
import pptx
from ebooklib import epub
from odf import opendocument, style, teletype, text as odf_text
from docx.oxml import OxmlElement
from docx.oxml.ns import qn

XLATE = os.environ["XLATE_BIN"]
DEFAULT_MODEL = os.environ["XLATE_DEFAULT_MODEL"]
HYPERLINK = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink"
TRANSLATED_PARTS = {"word/document.xml", "word/header1.xml"}


def png_1x1():
    """A one-pixel PNG, for a picture in the document."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b""))


def write_document(path, picture):
    document = docx.Document()
    document.sections[0].header.paragraphs[0].text = "The annual report"
    document.add_heading("A day in the park", level=1)
    first = document.add_paragraph()
    first.add_run("The ")
    first.add_run("dog").bold = True
    first.add_run(" runs in the ")
    first.add_run("park").italic = True
    first.add_run(".")
    document.add_paragraph("A man is reading a newspaper.")
    link = document.add_paragraph()
    link.add_run("Please visit our ")
    relation = document.part.relate_to("https://example.com", HYPERLINK, is_external=True)
    hyperlink = OxmlElement("w:hyperlink")
    hyperlink.set(qn("r:id"), relation)
    run, text = OxmlElement("w:r"), OxmlElement("w:t")
    text.text = "website"
    run.append(text)
    hyperlink.append(run)
    link._p.append(hyperlink)
    link.add_run(" today.")
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "Two children are playing."
    table.cell(0, 1).text = "A woman is singing."
    form = document.add_paragraph("Name:")
    form.add_run().add_tab()
    form.add_run("John")
    document.add_picture(picture)
    document.save(path)


class DocxThroughTheCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        picture = os.path.join(cls.dir.name, "pixel.png")
        with open(picture, "wb") as f:
            f.write(png_1x1())
        cls.source = os.path.join(cls.dir.name, "report.docx")
        cls.output = os.path.join(cls.dir.name, "bericht.docx")
        write_document(cls.source, picture)
        # No --mime_type: the input's extension says .docx.
        cls.translated = subprocess.run([XLATE, "translate", "--model_dir", DEFAULT_MODEL, "--input",
                                  cls.source, "--output", cls.output],
                                 capture_output=True, text=True, timeout=300)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_every_other_entry_comes_back_byte_for_byte(self):
        self.assertEqual(self.translated.returncode, 0, self.translated.stderr)
        with zipfile.ZipFile(self.source) as source, zipfile.ZipFile(self.output) as output:
            self.assertEqual(source.namelist(), output.namelist())
            for name in source.namelist():
                if name in TRANSLATED_PARTS:
                    self.assertNotEqual(source.read(name), output.read(name), name)
                else:
                    self.assertEqual(source.read(name), output.read(name), name)

    def test_paragraphs_are_translated_and_keep_their_formatting(self):
        self.assertEqual(self.translated.returncode, 0, self.translated.stderr)
        source, output = docx.Document(self.source), docx.Document(self.output)
        self.assertEqual(len(source.paragraphs), len(output.paragraphs))
        self.assertNotEqual(output.sections[0].header.paragraphs[0].text, "The annual report")
        # Styles stay with their paragraphs.
        self.assertEqual([p.style.name for p in source.paragraphs],
                         [p.style.name for p in output.paragraphs])
        for before, after in zip(source.paragraphs[1:4], output.paragraphs[1:4]):
            self.assertTrue(after.text.strip())
            self.assertNotEqual(before.text, after.text)
        runs = output.paragraphs[1].runs
        bold = [r.text for r in runs if r.bold]
        italic = [r.text for r in runs if r.italic]
        self.assertEqual(len(bold), 1, [(r.text, r.bold, r.italic) for r in runs])
        self.assertEqual(len(italic), 1, [(r.text, r.bold, r.italic) for r in runs])
        self.assertTrue(bold[0].strip() and italic[0].strip())
        self.assertNotIn(bold[0], ("dog", "The"))
        cells = [cell.text for cell in output.tables[0].rows[0].cells]
        self.assertTrue(all(cells) and cells != ["Two children are playing.",
                                                  "A woman is singing."], cells)

    def test_the_hyperlink_and_the_tab_stay_on_their_words(self):
        self.assertEqual(self.translated.returncode, 0, self.translated.stderr)
        paragraphs = docx.Document(self.output).paragraphs
        links = paragraphs[3]._p.findall(qn("w:hyperlink"))
        self.assertEqual(len(links), 1)
        self.assertTrue(links[0].get(qn("r:id")))
        self.assertTrue("".join(t.text for t in links[0].iter(qn("w:t"))).strip())
        # The tab between the label and the name, as in the source.
        form = paragraphs[4]._p
        items = [e.tag for e in form.iter() if e.tag in (qn("w:t"), qn("w:tab"))]
        self.assertEqual(items, [qn("w:t"), qn("w:tab"), qn("w:t")])

    def test_a_file_that_is_not_a_docx_is_refused_by_name(self):
        broken = os.path.join(self.dir.name, "broken.docx")
        with open(self.source, "rb") as f:
            data = f.read()
        with open(broken, "wb") as f:
            f.write(data[: len(data) // 2])
        run = subprocess.run([XLATE, "translate", "--model_dir", DEFAULT_MODEL, "--input", broken],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(run.returncode, 1)
        self.assertIn("not a ZIP archive", run.stderr)
        # Nothing half-written: an existing --output stays as it was, and nothing is left beside.
        existing = os.path.join(self.dir.name, "existing.docx")
        with open(existing, "wb") as f:
            f.write(b"keep me")
        run = subprocess.run([XLATE, "translate", "--model_dir", DEFAULT_MODEL, "--input", broken,
                              "--output", existing], capture_output=True, text=True, timeout=300)
        self.assertEqual(run.returncode, 1)
        with open(existing, "rb") as f:
            self.assertEqual(f.read(), b"keep me")
        self.assertFalse([name for name in os.listdir(self.dir.name) if "partial" in name])
        # An explicit --mime_type says what a file of another name is.
        renamed = os.path.join(self.dir.name, "report.bin")
        with open(renamed, "wb") as f:
            f.write(data)
        named = subprocess.run([XLATE, "translate", "--model_dir", DEFAULT_MODEL, "--input",
                                renamed, "--output", renamed + ".out", "--mime_type",
                                "application/vnd.openxmlformats-officedocument."
                                "wordprocessingml.document"],
                               capture_output=True, text=True, timeout=300)
        self.assertEqual(named.returncode, 0, named.stderr)
        self.assertEqual(len(docx.Document(renamed + ".out").paragraphs),
                         len(docx.Document(self.source).paragraphs))


def translate(source, output):
    return subprocess.run([XLATE, "translate", "--model_dir", DEFAULT_MODEL, "--input", source,
                           "--output", output], capture_output=True, text=True, timeout=300)


def changed_entries(source, output):
    """The entries whose bytes differ; the names must be the same, in the same order."""
    with zipfile.ZipFile(source) as a, zipfile.ZipFile(output) as b:
        assert a.namelist() == b.namelist()
        return {name for name in a.namelist() if a.read(name) != b.read(name)}


class OtherFormats(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def test_a_presentations_slides_and_notes(self):
        source = os.path.join(self.dir.name, "talk.pptx")
        output = os.path.join(self.dir.name, "vortrag.pptx")
        deck = pptx.Presentation()
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = "A day in the park"
        body = slide.placeholders[1].text_frame
        body.text = "The dog runs in the park."
        run = body.add_paragraph().add_run()
        run.text = "A man is reading a newspaper."
        run.font.bold = True
        slide.notes_slide.notes_text_frame.text = "Two children are playing."
        deck.slides.add_slide(deck.slide_layouts[1]).shapes.title.text = "A woman is singing."
        deck.save(source)
        result = translate(source, output)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(changed_entries(source, output),
                         {"ppt/slides/slide1.xml", "ppt/slides/slide2.xml",
                          "ppt/notesSlides/notesSlide1.xml"})
        translated = pptx.Presentation(output)
        first = translated.slides[0]
        self.assertNotEqual(first.shapes.title.text, "A day in the park")
        paragraphs = first.placeholders[1].text_frame.paragraphs
        self.assertEqual(len(paragraphs), 2)
        self.assertTrue(all(p.text.strip() for p in paragraphs))
        self.assertTrue(all(r.font.bold for r in paragraphs[1].runs if r.text.strip()))
        self.assertNotEqual(first.notes_slide.notes_text_frame.text, "Two children are playing.")
        self.assertNotEqual(translated.slides[1].shapes.title.text, "A woman is singing.")

    def test_a_workbooks_cell_text(self):
        source = os.path.join(self.dir.name, "sales.xlsx")
        output = os.path.join(self.dir.name, "umsatz.xlsx")
        book = openpyxl.Workbook()
        sheet = book.active
        sheet.title = "Sales"
        sheet["A1"] = "The dog runs in the park."
        sheet["A2"] = 42
        sheet["A3"] = "=A2*2"
        sheet["B1"] = "A woman is singing."
        book.save(source)
        result = translate(source, output)
        self.assertEqual(result.returncode, 0, result.stderr)
        # openpyxl writes each cell's text inline, in the sheet (Excel shares it).
        self.assertEqual(changed_entries(source, output), {"xl/worksheets/sheet1.xml"})
        translated = openpyxl.load_workbook(output)["Sales"]
        self.assertNotIn(translated["A1"].value, (None, "The dog runs in the park."))
        self.assertNotIn(translated["B1"].value, (None, "A woman is singing."))
        self.assertEqual(translated["A2"].value, 42)
        self.assertEqual(translated["A3"].value, "=A2*2")


    def test_an_open_document_texts_paragraphs_and_spans(self):
        source = os.path.join(self.dir.name, "report.odt")
        output = os.path.join(self.dir.name, "bericht.odt")
        document = opendocument.OpenDocumentText()
        bold = style.Style(name="Bold", family="text")
        bold.addElement(style.TextProperties(fontweight="bold"))
        document.automaticstyles.addElement(bold)
        document.text.addElement(odf_text.H(outlinelevel=1, text="A day in the park"))
        paragraph = odf_text.P(text="The ")
        paragraph.addElement(odf_text.Span(stylename=bold, text="dog"))
        paragraph.addText(" runs in the park.")
        document.text.addElement(paragraph)
        document.text.addElement(odf_text.P(text="A man is reading a newspaper."))
        document.save(source)
        result = translate(source, output)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(changed_entries(source, output), {"content.xml"})
        translated = opendocument.load(output)
        paragraphs = translated.getElementsByType(odf_text.P)
        heading = teletype.extractText(translated.getElementsByType(odf_text.H)[0])
        self.assertNotEqual(heading, "A day in the park")
        self.assertTrue(all(teletype.extractText(p).strip() for p in paragraphs))
        spans = paragraphs[0].getElementsByType(odf_text.Span)
        self.assertEqual(len(spans), 1)
        self.assertEqual(spans[0].getAttribute("stylename"), "Bold")
        self.assertTrue(teletype.extractText(spans[0]).strip())

    def test_subtitles_keep_their_cues_and_timings(self):
        srt = ("1\n00:00:01,000 --> 00:00:04,000\nThe dog runs in the park\nand the man reads.\n\n"
               "2\n00:00:05,000 --> 00:00:06,500\n<i>Two children are playing.</i>\n")
        vtt = ("WEBVTT\n\nNOTE a comment\n\n00:01.000 --> 00:04.000 align:start\n"
               "<v Anna>A woman is singing &amp; dancing.\n")
        outputs = {}
        for name, text in (("talk.srt", srt), ("talk.vtt", vtt)):
            source = os.path.join(self.dir.name, name)
            output = source + ".de" + os.path.splitext(name)[1]
            with open(source, "w", encoding="utf-8") as f:
                f.write(text)
            result = translate(source, output)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(output, encoding="utf-8") as f:
                translated = f.read()
            # Every line that is not a cue's text comes back as it was, in its place.
            kept = [line for line in text.split("\n") if "-->" in line or line.isdigit()
                    or line.startswith(("WEBVTT", "NOTE")) or not line]
            self.assertEqual([line for line in translated.split("\n") if line in kept], kept)
            self.assertNotIn("children", translated)
            self.assertNotIn("singing", translated)
            outputs[name] = translated
        # The SubRip cue's two lines stay two; the tags stay around the words.
        self.assertEqual(len(outputs["talk.srt"].split("\n\n")[0].split("\n")), 4)
        self.assertRegex(outputs["talk.srt"], r"<i>[^<]+</i>")
        self.assertIn("<v Anna>", outputs["talk.vtt"])

    def test_markdown_keeps_its_structure(self):
        source = os.path.join(self.dir.name, "readme.md")
        output = os.path.join(self.dir.name, "liesmich.md")
        with open(source, "w", encoding="utf-8") as f:
            f.write("# A day in the park\n\nThe *dog* runs to the [tree](https://example.com).\n\n"
                    "- Two children are playing.\n- A woman is singing.\n\n```sh\nmake all\n```\n")
        result = translate(source, output)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(output, encoding="utf-8") as f:
            translated = f.read()
        self.assertTrue(translated.startswith("# "), translated)
        self.assertIn("](https://example.com)", translated)
        self.assertEqual(translated.count("*"), 2, translated)
        self.assertEqual(translated.count("\n  - "), 2, translated)
        # cmark's own spelling of the fence, its code untouched.
        self.assertRegex(translated, r"```\s*sh\nmake all\n```")
        self.assertNotIn("children", translated)

    def test_an_overlong_sentence_is_translated_in_parts(self):
        # One sentence of some 400 tokens, past the model's 256: the file is translated, the
        # sentence in parts, rather than refused.
        source = os.path.join(self.dir.name, "list.md")
        output = os.path.join(self.dir.name, "liste.md")
        sentence = "We saw " + "the red car, the small dog, the old house, " * 30 + "and a tree."
        with open(source, "w", encoding="utf-8") as f:
            f.write(f"# Things\n\n{sentence}\n\nThe dog runs.\n")
        result = translate(source, output)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(output, encoding="utf-8") as f:
            paragraphs = f.read().split("\n\n")
        self.assertEqual(len(paragraphs), 3, paragraphs)
        self.assertGreater(len(paragraphs[1]), len(sentence) // 2)
        self.assertNotIn("small dog", paragraphs[1])

    def test_an_ebook_ebooklib_writes_opens_in_ebooklib(self):
        source = os.path.join(self.dir.name, "story.epub")
        output = os.path.join(self.dir.name, "geschichte.epub")
        book = epub.EpubBook()
        book.set_identifier("xlate-test")
        book.set_title("A day in the park")
        book.set_language("en")
        chapter = epub.EpubHtml(title="Chapter one", file_name="chapter1.xhtml", lang="en")
        chapter.content = ("<h1>A day in the park</h1><p>The <em>dog</em> runs in the park.</p>"
                           "<p>Two children are playing.</p>")
        book.add_item(chapter)
        book.toc = (chapter,)
        book.add_item(epub.EpubNcx())
        book.add_item(epub.EpubNav())
        book.spine = ["nav", chapter]
        epub.write_epub(source, book)
        result = translate(source, output)
        self.assertEqual(result.returncode, 0, result.stderr)
        changed = changed_entries(source, output)
        self.assertIn("EPUB/chapter1.xhtml", changed)
        self.assertTrue(all(name.endswith(".xhtml") for name in changed), changed)
        translated = epub.read_epub(output)
        text = next(item for item in translated.get_items_of_type(ebooklib.ITEM_DOCUMENT)
                    if item.get_name() == "chapter1.xhtml").get_content().decode()
        self.assertNotIn("children", text)
        self.assertEqual(text.count("<em>"), 1)
        self.assertEqual(text.count("<p>"), 2)

    def test_an_ebooks_chapters(self):
        source = os.path.join(self.dir.name, "book.epub")
        output = os.path.join(self.dir.name, "buch.epub")
        chapter = ('<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org/1999/'
                   'xhtml"><head><title>Chapter one</title></head><body><h1>A day in the park'
                   '</h1><p>The <em>dog</em> runs in the park &amp; the man is reading.</p>'
                   '<p>Two children are playing.<br/>A woman is singing.</p></body></html>')
        with zipfile.ZipFile(source, "w") as book:
            book.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
            book.writestr("META-INF/container.xml",
                          '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:'
                          'tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="'
                          'OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
                          '</rootfiles></container>', compress_type=zipfile.ZIP_DEFLATED)
            book.writestr("OEBPS/content.opf",
                          '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" '
                          'version="3.0" unique-identifier="id"><metadata/><manifest><item '
                          'id="c1" href="chapter1.xhtml" media-type="application/xhtml+xml"/>'
                          '</manifest><spine><itemref idref="c1"/></spine></package>',
                          compress_type=zipfile.ZIP_DEFLATED)
            book.writestr("OEBPS/chapter1.xhtml", chapter, compress_type=zipfile.ZIP_DEFLATED)
        result = translate(source, output)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(changed_entries(source, output), {"OEBPS/chapter1.xhtml"})
        with zipfile.ZipFile(output) as book:
            # The mimetype entry stays first and stored, as EPUB readers require.
            first = book.infolist()[0]
            self.assertEqual((first.filename, first.compress_type),
                             ("mimetype", zipfile.ZIP_STORED))
            translated = ElementTree.fromstring(book.read("OEBPS/chapter1.xhtml"))
        namespace = {"x": "http://www.w3.org/1999/xhtml"}
        paragraphs = translated.findall(".//x:p", namespace)
        self.assertEqual(len(paragraphs), 2)
        self.assertEqual(len(paragraphs[0].findall("x:em", namespace)), 1)
        self.assertEqual(len(paragraphs[1].findall("x:br", namespace)), 1)
        self.assertNotIn("park", "".join(translated.itertext()))

    def test_a_gettext_catalogue(self):
        source = os.path.join(self.dir.name, "messages.po")
        output = os.path.join(self.dir.name, "de.po")
        catalogue = polib.POFile()
        catalogue.metadata = {"Project-Id-Version": "app 1.0", "Language": "de",
                              "MIME-Version": "1.0",
                              "Content-Type": "text/plain; charset=UTF-8",
                              "Content-Transfer-Encoding": "8bit",
                              "Plural-Forms": "nplurals=2; plural=(n != 1);"}
        entries = [
            polib.POEntry(msgid="A man is reading a newspaper.", occurrences=[("src/a.c", "3")],
                          comment="Shown on the start page."),
            polib.POEntry(msgid="The dog of %s runs in the park.", flags=["c-format"]),
            polib.POEntry(msgid="Open the file", msgctxt="menu"),
            polib.POEntry(msgid="The house of {name} is small.\n", flags=["python-brace-format"]),
            polib.POEntry(msgid="%d child is playing.", msgid_plural="%d children are playing.",
                          msgstr_plural={0: "", 1: ""}, flags=["c-format"]),
            polib.POEntry(msgid="Yes", msgstr="Ja"),
            polib.POEntry(msgid="A draft", msgstr="Ein Entwurf", flags=["fuzzy"]),
        ]
        for entry in entries:
            catalogue.append(entry)
        catalogue.save(source)
        result = translate(source, output)
        self.assertEqual(result.returncode, 0, result.stderr)
        translated = polib.pofile(output)
        self.assertEqual(translated.metadata, catalogue.metadata)
        self.assertEqual(len(translated), len(catalogue))
        for before, after in zip(catalogue, translated):
            for field in ("msgid", "msgid_plural", "msgctxt", "flags", "occurrences", "comment"):
                self.assertEqual(getattr(after, field), getattr(before, field), field)
        by_id = {entry.msgid: entry for entry in translated}
        self.assertEqual(by_id["Yes"].msgstr, "Ja")
        self.assertEqual(by_id["A draft"].msgstr, "Ein Entwurf")
        for msgid in ("A man is reading a newspaper.", "The dog of %s runs in the park.",
                      "Open the file"):
            self.assertTrue(by_id[msgid].msgstr, msgid)
            self.assertNotEqual(by_id[msgid].msgstr, msgid)
        self.assertIn("%s", by_id["The dog of %s runs in the park."].msgstr)
        house = by_id["The house of {name} is small.\n"].msgstr
        self.assertIn("{name}", house)
        self.assertTrue(house.endswith("\n"), house)
        plural = by_id["%d child is playing."].msgstr_plural
        self.assertEqual(sorted(plural), [0, 1])
        self.assertTrue(all("%d" in form for form in plural.values()), plural)
        # gettext's own compiler checks the placeholders of each translation against its msgid.
        checked = subprocess.run(["msgfmt", "--check", "-o", os.devnull, output],
                                 capture_output=True, text=True)
        self.assertEqual(checked.returncode, 0, checked.stderr)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed, skipped = len(result.failures) + len(result.errors), len(result.skipped)
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed or not result.wasSuccessful() else 0)
