"""Files through the server on the default model: TranslateDocument (gRPC) translates a .docx as
`xlate translate --input` does, part for part, and a text file line by line; Translate's
text/html entries match the command line's; a file over the document limits, or not of its
type, is refused by name. Over HTTP, LibreTranslate's /translate_file answers with a URL the
client downloads the same file from, and /v1/translateDocument carries it in JSON. A document
job (POST /v1/documents) reports its progress, survives the server being killed while it runs,
and can be cancelled.

Run by CTest; prints 'N passed, N failed' and exits non-zero on failure.
"""
import base64
import io
import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

import docx
import grpc
import polib
import requests

from harness import XLATE_BIN, Server, free_port, pb2, sample_sentences, wait_until

DEFAULT_MODEL = os.environ["XLATE_DEFAULT_MODEL"]
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def make_docx():
    document = docx.Document()
    document.sections[0].header.paragraphs[0].text = "The annual report"
    first = document.add_paragraph()
    first.add_run("The ")
    first.add_run("dog").bold = True
    first.add_run(" runs in the park.")
    document.add_paragraph("A man is reading a newspaper. Two children are playing.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def make_long_docx(paragraphs):
    """A document of `paragraphs` real sentences, a few seconds' work for the default model."""
    document = docx.Document()
    for sentence in sample_sentences(paragraphs):
        document.add_paragraph(sentence)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def entries(archive):
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        return {name: z.read(name) for name in z.namelist()}


def command_line(data, suffix, *flags):
    """What `xlate translate --input FILE --output FILE` writes for `data`."""
    with tempfile.TemporaryDirectory() as directory:
        source, output = (os.path.join(directory, name + suffix) for name in ("in", "out"))
        with open(source, "wb") as f:
            f.write(data)
        subprocess.run([XLATE_BIN, "translate", "--model_dir", DEFAULT_MODEL, "--threads=1",
                        "--input", source, "--output", output, *flags], check=True,
                       capture_output=True)
        with open(output, "rb") as f:
            return f.read()


class Documents(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server("--max_document_code_points=400", f"--http_port={free_port()}",
                            model_dir=DEFAULT_MODEL)
        cls.http = f"http://127.0.0.1:{cls.server.http_port}"

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def translate_document(self, content, **fields):
        return self.server.stub.TranslateDocument(
            pb2.TranslateDocumentRequest(content=content, **fields), timeout=120)

    def test_a_docx_is_translated_as_the_command_line_translates_it(self):
        source = make_docx()
        reply = self.translate_document(source, file_name="report.docx")
        self.assertEqual(reply.mime_type, DOCX)
        self.assertTrue(reply.model)
        served, offline = entries(reply.content), entries(command_line(source, ".docx"))
        self.assertEqual(served.keys(), entries(source).keys())
        # One pipeline: every part the same as the command line's (the archive's timestamps
        # of the rewritten parts aside).
        self.assertEqual(served, offline)
        self.assertNotEqual(served["word/document.xml"], entries(source)["word/document.xml"])
        translated = docx.Document(io.BytesIO(reply.content))
        bold = [r.text for p in translated.paragraphs for r in p.runs if r.bold]
        self.assertEqual(len(bold), 1)
        self.assertTrue(bold[0].strip())

    def test_html_entries_are_translated_as_the_command_line_translates_them(self):
        page = "<p>The <b>dog</b> runs in the park.</p><p>A man is reading.</p>"
        served = self.server.stub.Translate(
            pb2.TranslateRequest(contents=[page], mime_type="text/html"), timeout=120)
        self.assertEqual(served.translations[0].translated_text.encode(),
                         command_line(page.encode(), ".html"))

    def test_the_stream_counts_the_sentences_done_then_answers_as_the_call_does(self):
        source = make_docx()
        messages = list(self.server.stub.TranslateDocumentStream(
            pb2.TranslateDocumentRequest(content=source, file_name="report.docx"), timeout=120))
        progress = [m.progress for m in messages if m.HasField("progress")]
        self.assertTrue(messages[-1].HasField("response"))
        # "The dog runs in the park.", two sentences, and the header: 4 in all.
        self.assertTrue(progress)
        self.assertTrue(all(p.sentences_total == 4 for p in progress), progress)
        done = [p.sentences_done for p in progress]
        self.assertEqual(done, sorted(done))
        self.assertLessEqual(done[-1], 4)
        unary = self.translate_document(source, file_name="report.docx")
        self.assertEqual(entries(messages[-1].response.content), entries(unary.content))

    def test_a_text_file_is_translated_line_by_line(self):
        text = "The dog runs.\r\n\r\nA man is reading a newspaper.\r\nTwo children play."
        reply = self.translate_document(text.encode(), mime_type="text/plain")
        lines = reply.content.decode().split("\r\n")
        self.assertEqual(len(lines), 4)
        self.assertEqual(lines[1], "")
        self.assertTrue(all(lines[i] and lines[i] != text.split("\r\n")[i] for i in (0, 2, 3)))

    def test_an_overlong_sentence_is_translated_in_parts(self):
        # Some 80 tokens in one sentence, past --max_input_tokens 40: refused as a Translate
        # call's sentence, translated in parts in a file.
        sentence = "We saw " + "the red car, the small dog, the old house, " * 7 + "and a tree."
        server = Server(f"--http_port={free_port()}", "--max_input_tokens=40",
                        model_dir=DEFAULT_MODEL)
        try:
            page = f"<p>{sentence}</p><p>The dog runs.</p>".encode()
            reply = server.stub.TranslateDocument(
                pb2.TranslateDocumentRequest(content=page, mime_type="text/html"), timeout=120)
            self.assertEqual(reply.content.count(b"<p>"), 2, reply.content)
            self.assertNotIn(b"small dog", reply.content)
            with self.assertRaises(grpc.RpcError) as refused:
                server.stub.Translate(pb2.TranslateRequest(contents=[sentence]), timeout=120)
            self.assertIn("--max_input_tokens", refused.exception.details())
        finally:
            server.close()

    def test_files_over_the_limits_or_not_of_their_type_are_refused_by_name(self):
        with self.assertRaises(grpc.RpcError) as caught:
            self.translate_document(("The dog runs in the park. " * 20).encode(),
                                    file_name="long.txt")
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("the limit is 400 (--max_document_code_points)",
                      caught.exception.details())
        with self.assertRaises(grpc.RpcError) as caught:
            self.translate_document(b"PK\x03\x04 not really", file_name="report.docx")
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("not a ZIP archive", caught.exception.details())
        with self.assertRaises(grpc.RpcError) as caught:
            self.translate_document(b"%PDF-1.7", mime_type="application/pdf")
        self.assertIn('mime_type "application/pdf" is not supported', caught.exception.details())
        # Translate's entries are text: a file's type there is refused, naming the way to send it.
        with self.assertRaises(grpc.RpcError) as caught:
            self.server.stub.Translate(pb2.TranslateRequest(contents=["x"], mime_type=DOCX),
                                       timeout=60)
        self.assertIn("TranslateDocument", caught.exception.details())

    def test_libretranslate_translate_file_answers_a_url_to_download_the_file_from(self):
        source = make_docx()
        answer = requests.post(f"{self.http}/translate_file",
                               files={"file": ("my report.docx", source)},
                               data={"source": "en", "target": "de"}, timeout=120)
        self.assertEqual(answer.status_code, 200, answer.text)
        url = answer.json()["translatedFileUrl"]
        self.assertRegex(url, r"^http://127\.0\.0\.1:\d+/download_file/[0-9a-f]{32}/"
                              r"my%20report\.docx$")
        download = requests.get(url, timeout=60)
        self.assertEqual(download.status_code, 200)
        self.assertEqual(download.headers["Content-Type"], DOCX)
        self.assertIn("filename*=UTF-8''my%20report.docx", download.headers["Content-Disposition"])
        grpc_reply = self.translate_document(source, file_name="report.docx")
        self.assertEqual(entries(download.content), entries(grpc_reply.content))
        # An id that was never given out, and a form without a file.
        missing = requests.get(url.replace(url.split("/")[-2], "0" * 32), timeout=60)
        self.assertEqual(missing.status_code, 404)
        refused = requests.post(f"{self.http}/translate_file", data={"target": "de"}, timeout=60)
        self.assertEqual(refused.status_code, 400)
        self.assertEqual(refused.json(), {"error": "Invalid request: missing file parameter"})
        broken = requests.post(f"{self.http}/translate_file", files={"file": ("a.docx", b"PK")},
                               data={"target": "de"}, timeout=60)
        self.assertEqual(broken.status_code, 400)
        self.assertIn("not a ZIP archive", broken.json()["error"])

    def test_a_gettext_template_comes_back_with_its_messages_filled_in(self):
        template = ('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=CHARSET\\n"\n\n'
                    '#: src/main.c:3\n#, c-format\nmsgid "The dog of %s runs in the park."\n'
                    'msgstr ""\n\nmsgctxt "menu"\nmsgid "Open the file"\nmsgstr ""\n')
        answer = requests.post(f"{self.http}/translate_file",
                               files={"file": ("messages.pot", template.encode())},
                               data={"source": "en", "target": "de"}, timeout=120)
        self.assertEqual(answer.status_code, 200, answer.text)
        download = requests.get(answer.json()["translatedFileUrl"], timeout=60)
        self.assertEqual(download.status_code, 200)
        self.assertEqual(download.headers["Content-Type"], "text/x-gettext-translation-template")
        catalogue = polib.pofile(download.content.decode())
        self.assertEqual([(e.msgctxt, e.msgid) for e in catalogue],
                         [(None, "The dog of %s runs in the park."), ("menu", "Open the file")])
        self.assertEqual(catalogue[0].occurrences, [("src/main.c", "3")])
        self.assertIn("%s", catalogue[0].msgstr)
        self.assertTrue(all(e.msgstr and e.msgstr != e.msgid for e in catalogue))
        self.assertEqual(catalogue.metadata["Content-Type"], "text/plain; charset=UTF-8")

    def test_v1_translate_document_carries_the_file_in_json(self):
        source = make_docx()
        answer = requests.post(f"{self.http}/v1/translateDocument",
                               json={"content": base64.b64encode(source).decode(),
                                     "fileName": "report.docx"}, timeout=120)
        self.assertEqual(answer.status_code, 200, answer.text)
        body = answer.json()
        self.assertEqual(body["mimeType"], DOCX)
        grpc_reply = self.translate_document(source, file_name="report.docx")
        self.assertEqual(entries(base64.b64decode(body["content"])), entries(grpc_reply.content))


class DocumentJobs(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.servers = []

    def tearDown(self):
        for server in self.servers:
            server.close()
        self.dir.cleanup()

    def start(self, *flags):
        server = Server(f"--http_port={free_port()}", f"--jobs_dir={self.dir.name}",
                        *flags, model_dir=DEFAULT_MODEL)
        self.servers.append(server)
        return server, f"http://127.0.0.1:{server.http_port}/v1/documents"

    def status(self, url, job):
        return requests.get(f"{url}/{job}", timeout=60).json()

    def test_a_job_goes_on_after_the_server_is_killed_while_it_runs(self):
        source = make_long_docx(120)
        server, url = self.start()
        created = requests.post(url, json={"content": base64.b64encode(source).decode(),
                                           "fileName": "long.docx"}, timeout=60)
        self.assertEqual(created.status_code, 202, created.text)
        job = created.json()["id"]
        self.assertEqual(created.json()["state"], "QUEUED")
        self.assertTrue(wait_until(lambda: self.status(url, job)["sentencesDone"] > 0, 120))
        running = self.status(url, job)
        self.assertEqual(running["state"], "RUNNING")
        self.assertGreaterEqual(running["sentencesTotal"], 120)
        self.assertLess(running["sentencesDone"], running["sentencesTotal"])
        server.kill()
        server, url = self.start()
        self.assertTrue(wait_until(lambda: self.status(url, job)["state"] == "DONE", 300),
                        self.status(url, job))
        done = self.status(url, job)
        self.assertEqual(done["sentencesDone"], done["sentencesTotal"])
        content = requests.get(f"{url}/{job}/content", timeout=60)
        self.assertEqual(content.status_code, 200)
        self.assertIn("long.docx", content.headers["Content-Disposition"])
        direct = server.stub.TranslateDocument(
            pb2.TranslateDocumentRequest(content=source, file_name="long.docx"), timeout=300)
        self.assertEqual(entries(content.content), entries(direct.content))

    def test_a_job_can_be_cancelled_and_unknown_ones_are_not_found(self):
        server, url = self.start()
        created = requests.post(url, json={"content": base64.b64encode(make_long_docx(120)).decode(),
                                           "fileName": "long.docx"}, timeout=60)
        job = created.json()["id"]
        cancelled = requests.delete(f"{url}/{job}", timeout=60)
        self.assertEqual(cancelled.status_code, 200)
        self.assertTrue(wait_until(lambda: self.status(url, job)["state"] == "CANCELLED", 60),
                        self.status(url, job))
        content = requests.get(f"{url}/{job}/content", timeout=60)
        self.assertEqual(content.status_code, 400)
        self.assertIn("is CANCELLED", content.json()["message"])
        self.assertEqual(requests.get(f"{url}/{'0' * 32}", timeout=60).status_code, 404)
        broken = requests.post(url, json={"content": base64.b64encode(b"not a zip").decode(),
                                          "fileName": "x.docx"}, timeout=60).json()["id"]
        self.assertTrue(wait_until(lambda: self.status(url, broken)["state"] == "FAILED", 60))
        self.assertIn("not a ZIP archive", self.status(url, broken)["error"])

    def test_a_job_is_its_keys_alone(self):
        keys = os.path.join(self.dir.name, "keys.txt")
        alice, bob = "alice-key-0123456789abcdef", "bob-key-0123456789abcdef"
        with open(keys, "w", encoding="utf-8") as f:
            f.write(f"{alice}\n{bob}\n")
        server, url = self.start(f"--api_keys_file={keys}")
        body = {"content": base64.b64encode(make_docx()).decode(), "fileName": "a.docx"}
        self.assertEqual(requests.post(url, json=body, timeout=60).status_code, 401)
        created = requests.post(url, json=body, headers={"X-API-Key": alice}, timeout=60)
        self.assertEqual(created.status_code, 202, created.text)
        job = created.json()["id"]
        as_alice = {"X-API-Key": alice}
        self.assertTrue(wait_until(lambda: requests.get(f"{url}/{job}", headers=as_alice,
                                                        timeout=60).json()["state"] == "DONE",
                                   120))
        for headers in ({"X-API-Key": bob}, {}):
            answer = requests.get(f"{url}/{job}/content", headers=headers, timeout=60)
            self.assertIn(answer.status_code, (401, 404), answer.text)
        self.assertEqual(requests.get(f"{url}/{job}/content", headers=as_alice,
                                      timeout=60).status_code, 200)
        # The key is never written down, only its name.
        for root, _, files in os.walk(self.dir.name):
            for name in files:
                if name != "keys.txt":
                    with open(os.path.join(root, name), "rb") as f:
                        self.assertNotIn(alice.encode(), f.read())


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed, skipped = len(result.failures) + len(result.errors), len(result.skipped)
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed or not result.wasSuccessful() else 0)
