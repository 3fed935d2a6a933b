"""The server's HTTP/JSON face (--http_port, server/http_gateway.h) against its gRPC one: the
same requests give the same translations through /v1/translate and /v1/translate:stream as
through Translate and TranslateStream; LibreTranslate's client from PyPI (libretranslatepy,
written by no one here) translates and lists languages; bad input gets the HTTP status and a
body that names what is wrong; HTTP calls are counted in /metrics like gRPC ones.

Run by CTest; prints 'N passed, N failed' and exits non-zero on failure.
"""
import html.parser
import json
import re
import shutil
import socket
import ssl
import sys
import tempfile
import threading
import time
import unittest
from xml.etree import ElementTree
import urllib.error
import urllib.request

import grpc
from libretranslatepy import LibreTranslateAPI

from harness import Server, free_port, make_certificate, pb2, sample_sentences

MAX_BODY = 20000


def post(port, path, body, headers=None, method="POST"):
    """(status, parsed JSON or raw text, headers) of one HTTP request."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json",
                                              **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            status, text, response_headers = response.status, response.read(), response.headers
    except urllib.error.HTTPError as error:
        status, text, response_headers = error.code, error.read(), error.headers
    try:
        return status, json.loads(text), response_headers
    except ValueError:
        return status, text.decode(errors="replace"), response_headers


def get(port, path):
    return post(port, path, b"", method="GET")



class _Markup(html.parser.HTMLParser):
    """Python's own HTML parser: the tags and comments of a page in order, and the text of each
    <p> and <li>, white space collapsed."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.markup, self.blocks, self.open_blocks = [], [], []

    def handle_starttag(self, tag, attrs):
        self.markup.append(("start", tag, attrs))
        if tag in ("p", "li"):
            self.open_blocks.append([])

    def handle_endtag(self, tag):
        self.markup.append(("end", tag))
        if tag in ("p", "li") and self.open_blocks:
            self.blocks.append(" ".join("".join(self.open_blocks.pop()).split()))

    def handle_comment(self, data):
        self.markup.append(("comment", data))

    def handle_data(self, data):
        if self.open_blocks:
            self.open_blocks[-1].append(data)


def markup_of(page):
    """The page's elements (tag and attributes) and comments as a tree, read from Python's
    parser's events: each element with the markup inside it. Siblings are compared as a sorted
    list, since inline elements follow their words, whose order the translation may change
    ("because he <b>was</b> <i>tired</i>" -> "weil er <i>müde</i> <b>war</b>"); what is inside
    what, and every attribute, must stay."""
    reader = _Markup()
    reader.feed(page)
    root = []
    stack = [root]
    for event in reader.markup:
        if event[0] == "start":
            children = []
            stack[-1].append((event[1], tuple(event[2]), children))
            if event[1] not in VOID_ELEMENTS:
                stack.append(children)
        elif event[0] == "end":
            if len(stack) > 1:
                stack.pop()
        else:
            stack[-1].append(event)

    def canonical(nodes):
        return sorted(repr(node) if node[0] == "comment" else
                      repr((node[0], node[1], canonical(node[2]))) for node in nodes)
    return canonical(root)


VOID_ELEMENTS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                 "source", "track", "wbr"}


def block_texts(page):
    reader = _Markup()
    reader.feed(page)
    return reader.blocks

class HttpGateway(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(f"--http_port={free_port()}",
                            f"--max_receive_message_bytes={MAX_BODY}")
        cls.port = cls.server.http_port
        cls.sentences = sample_sentences(6)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def grpc_translate(self, **fields):
        return self.server.stub.Translate(pb2.TranslateRequest(**fields), timeout=120)

    def test_v1_translate_equals_grpc(self):
        options = {"beamSize": 4, "nBest": 3, "returnScores": True}
        status, body, headers = post(self.port, "/v1/translate",
                                     {"contents": self.sentences, "options": options})
        self.assertEqual(status, 200, body)
        self.assertIn("application/json", headers["Content-Type"])
        expected = self.grpc_translate(
            contents=self.sentences,
            options=pb2.DecodingOptions(beam_size=4, n_best=3, return_scores=True))
        self.assertEqual(len(body["translations"]), len(self.sentences))
        for got, want in zip(body["translations"], expected.translations):
            self.assertEqual(got["translatedText"], want.translated_text)
            self.assertEqual([h["text"] for h in got["hypotheses"]],
                             [h.text for h in want.hypotheses])
            for h, w in zip(got["hypotheses"], want.hypotheses):
                self.assertAlmostEqual(h["score"], w.score, places=4)
        # Field names as written in the .proto are accepted too (the JSON mapping's rule).
        status, snake, _ = post(self.port, "/v1/translate",
                                {"contents": self.sentences[:1],
                                 "options": {"beam_size": 1}})
        self.assertEqual(status, 200, snake)

    def test_v1_stream_is_lines_ending_with_the_response(self):
        text = " ".join(self.sentences[:3])
        status, raw, headers = post(self.port, "/v1/translate:stream", {"contents": [text]})
        self.assertEqual(status, 200, raw)
        self.assertIn("application/x-ndjson", headers["Content-Type"])
        # Several lines are not one JSON document: the helper hands back the text.
        self.assertIsInstance(raw, str)
        lines = [json.loads(line) for line in raw.splitlines()]
        self.assertGreaterEqual(len(lines), 2)
        self.assertTrue(all("partial" in line for line in lines[:-1]), lines)
        final = lines[-1]["response"]["translations"][0]["translatedText"]
        self.assertEqual(final, self.grpc_translate(contents=[text]).translations[0]
                         .translated_text)
        for line in lines[:-1]:  # settled text only: each partial begins the final text
            self.assertTrue(final.startswith(line["partial"]["text"]), line)

    def test_v1_models_lists_the_served_model(self):
        status, body, _ = get(self.port, "/v1/models")
        self.assertEqual(status, 200, body)
        expected = self.server.stub.ListModels(pb2.ListModelsRequest(), timeout=30)
        self.assertEqual([m["name"] for m in body["models"]], [m.name for m in expected.models])

    def test_libretranslate_client(self):
        client = LibreTranslateAPI(f"http://127.0.0.1:{self.port}/")
        sentence = self.sentences[0]
        self.assertEqual(client.translate(sentence, "en", "de"),
                         self.grpc_translate(contents=[sentence]).translations[0]
                         .translated_text)
        languages = {language["code"]: language for language in client.languages()}
        self.assertEqual(languages["en"]["name"], "English")
        self.assertEqual(languages["en"]["targets"], ["de"])
        with self.assertRaises(urllib.error.HTTPError) as refused:
            client.translate(sentence, "en", "fr")
        self.assertEqual(refused.exception.code, 400)
        self.assertIn('"fr" is not served', json.loads(refused.exception.read())["error"])

    def test_libretranslate_multipart_form(self):
        boundary = "xlateboundary"
        parts = [("q", self.sentences[0]), ("source", "en"), ("target", "de")]
        body = "".join(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
                       f"{value}\r\n" for name, value in parts) + f"--{boundary}--\r\n"
        status, answer, _ = post(self.port, "/translate", body.encode(),
                                 {"Content-Type": f"multipart/form-data; boundary={boundary}"})
        self.assertEqual(status, 200, answer)
        self.assertEqual(answer["translatedText"],
                         self.grpc_translate(contents=self.sentences[:1]).translations[0]
                         .translated_text)

    def test_a_slow_client_is_cut_off_and_holds_up_no_one(self):
        slow = socket.create_connection(("127.0.0.1", self.port))
        slow.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n")
        started = time.monotonic()
        # Others are served meanwhile.
        self.assertEqual(post(self.port, "/v1/translate", {"contents": ["A dog."]})[0], 200)
        slow.settimeout(60)
        # Headers and body may come in separate segments: read until the body is whole.
        received = b""
        while True:
            chunk = slow.recv(4096)
            received += chunk
            head, _, body = received.partition(b"\r\n\r\n")
            length = re.search(rb"Content-Length: (\d+)", head)
            if not chunk or (length and len(body) >= int(length[1])):
                break
        answer = received.decode(errors="replace")
        slow.close()
        self.assertTrue(answer.startswith("HTTP/1.1 408"), answer)
        self.assertIn("not sent in full within 10 s", answer)
        self.assertLess(time.monotonic() - started, 30)  # the 10 s read limit, not forever

    def test_html_places_inline_tags_and_translates_blocks_whole(self):
        page = ('<p class="x">A man is <b>riding</b> a <a href="/b?x=1&amp;y=2">red '
                '<i>bike</i></a>.</p><!-- note --><ul><li>Two dogs play. <em>They run '
                'home.</em></li><li>Run <code>make all</code> now.</li></ul>'
                '<pre>  keep  this </pre><p><span translate="no">Acme</span> sells bikes.</p>')
        blocks = ["A man is riding a red bike.", "Two dogs play. They run home."]
        plain = [t.translated_text for t in self.grpc_translate(contents=blocks).translations]
        hello = self.grpc_translate(contents=["Hello"]).translations[0].translated_text
        reply = self.grpc_translate(contents=[page, "<i>Hello</i>"], mime_type="text/html")
        self.assertEqual(len(reply.translations), 2)
        translated = reply.translations[0].translated_text
        # Python's parser (not xlate's) reads the same elements, attributes and comment in the
        # same order and nesting; each paragraph's text is the plain translation of its whole
        # text (the block was translated whole, not cut at its tags).
        self.assertEqual(markup_of(translated), markup_of(page))
        texts = block_texts(translated)
        self.assertEqual(texts[:2], plain)
        for kept in ('<code>make all</code>', '<pre>  keep  this </pre>',
                     '<span translate="no">Acme</span>', '<!-- note -->'):
            self.assertIn(kept, translated)
        # A tag around a whole block stays around its whole translation.
        self.assertEqual(reply.translations[1].translated_text, f"<i>{hello}</i>")
        status, body, _ = post(self.port, "/translate",
                               {"q": page, "source": "en", "target": "de", "format": "html"})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["translatedText"], translated)
        for refused, what in (({"options": {"nBest": 2}}, "n_best"), ({"alignment": {}},
                                                                     "alignment")):
            status, body, _ = post(self.port, "/v1/translate",
                                   {"contents": [page], "mimeType": "text/html", **refused})
            self.assertEqual(status, 400, body)
            self.assertIn(what, body["message"])
        status, body, _ = post(self.port, "/v1/translate:stream",
                               {"contents": [page], "mimeType": "text/html"})
        self.assertEqual(status, 400, body)
        self.assertIn("TranslateStream", body["message"])

    def test_real_world_pages_keep_their_element_structure(self):
        news = ('<article><h1>Storm hits the <em>north coast</em></h1><p class="lead">Heavy '
                'rain fell on <time datetime="2026-12-01">Monday</time>. <a href="/live">Roads '
                'were closed. Schools stayed shut</a> until noon.</p><p>The mayor said: '
                '<q>We are <strong>ready</strong>.</q></p></article>')
        product = ('<div class="product"><h2>Blue <b>running</b> shoes</h2><img src="s.jpg" '
                   'alt="shoes"><ul><li>Light and <i>very</i> comfortable</li><li>Price: '
                   '<span class="price notranslate">49.99 EUR</span> only</li></ul>'
                   '<button>Add to cart</button></div>')
        docs = ('<section><p>Install it with <code>pip install xlate</code> and run '
                '<kbd>Ctrl</kbd>+<kbd>C</kbd> to stop.</p><pre><code>xlate translate &lt; in.txt'
                '</code></pre><p>See the <a href="/api"><code>Translate</code> call</a> for '
                'details.</p></section>')
        reply = self.grpc_translate(contents=[news, product, docs], mime_type="text/html")
        for page, translation in zip((news, product, docs), reply.translations):
            translated = translation.translated_text
            self.assertEqual(markup_of(translated), markup_of(page), translated)
        docs_out = reply.translations[2].translated_text
        for kept in ('<code>pip install xlate</code>', '<kbd>Ctrl</kbd>', '<kbd>C</kbd>',
                     '<pre><code>xlate translate &lt; in.txt</code></pre>',
                     '<code>Translate</code>'):
            self.assertIn(kept, docs_out)
        self.assertIn('<span class="price notranslate">49.99 EUR</span>',
                      reply.translations[1].translated_text)

    def test_xml_keeps_its_structure_and_translates_its_text(self):
        document = ('<?xml version="1.0" encoding="UTF-8"?>\n<article id="7">'
                    '<title>A man is <em>riding</em> a bike.</title><!-- note -->'
                    '<para translate="no">Acme Corp</para><para>Two dogs play.<![CDATA[x < y]]>'
                    '</para></article>')
        blocks = ["A man is riding a bike.", "Two dogs play."]
        plain = [t.translated_text for t in self.grpc_translate(contents=blocks).translations]
        reply = self.grpc_translate(contents=[document], mime_type="text/xml")
        translated = reply.translations[0].translated_text
        # An independent parser reads the same elements, attributes and kept texts.
        source_tree, output_tree = ElementTree.fromstring(document), ElementTree.fromstring(
            translated.encode("utf-8"))
        self.assertEqual([(e.tag, e.attrib) for e in source_tree.iter()],
                         [(e.tag, e.attrib) for e in output_tree.iter()])
        # The title is translated whole (its <em> put back on some of its words).
        title = output_tree.find("title")
        self.assertEqual("".join(title.itertext()), plain[0])
        paras = output_tree.findall("para")
        self.assertEqual(paras[0].text, "Acme Corp")
        self.assertEqual(paras[1].text, plain[1] + "x < y")
        self.assertIn("<!-- note -->", translated)
        with self.assertRaises(grpc.RpcError) as caught:
            self.grpc_translate(contents=["<a>\n<b></a>"], mime_type="text/xml")
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("contents[0]: not well-formed XML at line 2", caught.exception.details())

    def test_libretranslate_arrays_and_alternatives(self):
        status, body, _ = post(self.port, "/translate",
                               {"q": self.sentences[:2], "source": "en", "target": "de",
                                "alternatives": 2})
        self.assertEqual(status, 200, body)
        expected = self.grpc_translate(contents=self.sentences[:2],
                                       options=pb2.DecodingOptions(beam_size=4, n_best=3))
        self.assertEqual(body["translatedText"],
                         [t.translated_text for t in expected.translations])
        self.assertEqual(body["alternatives"],
                         [[h.text for h in t.hypotheses[1:]] for t in expected.translations])
        for missing, message in (({"source": "en", "target": "de"}, "missing q"),
                                 ({"q": "x", "target": "de"}, "missing source"),
                                 ({"q": 5, "source": "en", "target": "de"}, "q must be"),
                                 ({"q": "x", "source": "en", "target": "de",
                                   "alternatives": -1}, "alternatives must be"),
                                 ({"q": "12 345", "source": "auto", "target": "de"},
                                  "no language could be told")):
            status, body, _ = post(self.port, "/translate", missing)
            self.assertEqual(status, 400, missing)
            self.assertIn(message, body["error"])

    def test_detection(self):
        english = "Two young men are playing football on a green field next to the river."
        french = "Deux jeunes hommes jouent au football sur un terrain vert près de la rivière."
        grpc_answer = self.server.stub.DetectLanguage(
            pb2.DetectLanguageRequest(contents=[english, french, "Hund", ""]), timeout=30)
        best = [d.languages[0] for d in grpc_answer.detections]
        self.assertEqual([b.language_code for b in best], ["en", "fr", "und", "und"])
        self.assertTrue(best[0].reliable and best[1].reliable)
        self.assertGreater(best[0].confidence, 0.8)
        # Too short to tell: no candidate presented as fact.
        self.assertFalse(best[2].reliable)
        self.assertEqual(best[3].confidence, 0)
        status, body, _ = post(self.port, "/v1/detect", {"contents": [english]})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["detections"][0]["languages"][0]["languageCode"], "en")
        client = LibreTranslateAPI(f"http://127.0.0.1:{self.port}/")
        self.assertEqual(client.detect(french)[0]["language"], "fr")
        self.assertGreater(client.detect(french)[0]["confidence"], 80)
        # source "auto": detected, reported, translated as with the code named.
        named = self.grpc_translate(contents=[english], source_language_code="en")
        auto = self.grpc_translate(contents=[english], source_language_code="auto")
        self.assertEqual(auto.translations[0].translated_text,
                         named.translations[0].translated_text)
        self.assertEqual(auto.detected_source_language.language_code, "en")
        self.assertFalse(named.HasField("detected_source_language"))
        status, body, _ = post(self.port, "/translate",
                               {"q": english, "source": "auto", "target": "de"})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["detectedLanguage"]["language"], "en")
        self.assertEqual(body["translatedText"], named.translations[0].translated_text)
        # A detected language no model reads, and entries that disagree, are named.
        status, body, _ = post(self.port, "/translate",
                               {"q": french, "source": "auto", "target": "de"})
        self.assertEqual(status, 400, body)
        self.assertIn("detected as fr", body["error"])
        status, body, _ = post(self.port, "/v1/translate",
                               {"contents": [english, french], "sourceLanguageCode": "auto"})
        self.assertEqual(status, 400, body)
        self.assertIn("contents[0] reads as en and contents[1] as fr", body["message"])
        status, body, _ = post(self.port, "/v1/detect", {"contents": []})
        self.assertEqual(status, 400, body)

    def test_bad_input_gets_its_status_and_says_why(self):
        cases = [
            (b'{"contents": ["a"', {}, 400, "not a xlate.v1.TranslateRequest in JSON"),
            ({"contentz": ["a"]}, {}, 400, "contentz"),
            ({"contents": 5}, {}, 400, "contents"),
            ({"contents": []}, {}, 400, "contents"),
            ({"contents": ["a"], "options": {"beamSize": 99}}, {}, 400, "beam_size"),
            ({"contents": ["a"], "model": "nope"}, {}, 404, "nope"),
            (b'{"contents": ["\xff\xfe"]}', {}, 400, ""),
            ({"contents": ["a"]}, {"X-Request-Timeout": "soon"}, 400, "X-Request-Timeout"),
            ({"contents": [" ".join(self.sentences)]}, {"X-Request-Timeout": "0.000001"}, 504,
             ""),
        ]
        for body, headers, status, message in cases:
            got, answer, _ = post(self.port, "/v1/translate", body, headers)
            self.assertEqual(got, status, (body, answer))
            self.assertIsInstance(answer, dict, (body, answer))
            self.assertIn(message, answer["message"], (body, answer))
            self.assertEqual(answer["code"], {400: 3, 404: 5, 504: 4}[status], (body, answer))
        too_big = {"contents": ["x" * (MAX_BODY + 10)]}
        got, answer, _ = post(self.port, "/v1/translate", too_big)
        self.assertEqual(got, 413)
        self.assertIn("--max_receive_message_bytes", answer["error"])
        got, answer, _ = post(self.port, "/v2/nothing", {"contents": ["a"]})
        self.assertEqual(got, 404)
        self.assertIn("/v2/nothing", answer["error"])
        got, answer, headers = get(self.port, "/v1/translate")
        self.assertEqual(got, 405)
        self.assertEqual(headers["Allow"], "POST")

    def test_the_page_cannot_be_framed_and_keeps_no_key_past_its_tab(self):
        status, page, headers = get(self.port, "/")
        self.assertEqual(status, 200)
        self.assertIn("frame-ancestors 'none'", headers["Content-Security-Policy"])
        self.assertEqual(headers["X-Frame-Options"], "DENY")
        self.assertNotIn("localStorage", page)
        self.assertIn("sessionStorage", page)

    def test_invalid_utf8_is_refused_by_name_without_a_log_line_per_request(self):
        before = len(self.server.stderr_lines)
        for path in ("/v1/translate", "/v1/detect"):
            status, body, _ = post(self.port, path, b'{"contents": ["a \xff\xfe b"]}')
            self.assertEqual(status, 400, body)
            self.assertIn("not valid UTF-8", body["message"])
        status, body, _ = post(self.port, "/translate",
                               b'{"q": "a \xff", "source": "en", "target": "de"}')
        self.assertEqual(status, 400, body)
        self.assertIn("not valid UTF-8", body["error"])
        self.assertFalse([line for line in self.server.stderr_lines[before:]
                          if "libprotobuf" in line], self.server.stderr_lines[before:])

    def test_http_calls_are_counted_as_grpc_ones(self):
        def count(code):  # over every model label
            with urllib.request.urlopen(
                    f"http://127.0.0.1:{self.server.metrics_port}/metrics", timeout=30) as page:
                return sum(float(line.rsplit(" ", 1)[1])
                           for line in page.read().decode().splitlines()
                           if line.startswith("xlate_requests_total{")
                           and f'code="{code}"' in line)

        before_ok, before_invalid = count("OK"), count("INVALID_ARGUMENT")
        self.assertEqual(post(self.port, "/v1/translate", {"contents": ["A dog."]})[0], 200)
        self.assertEqual(post(self.port, "/translate",
                              {"q": "A cat.", "source": "en", "target": "de"})[0], 200)
        self.assertEqual(post(self.port, "/v1/translate",
                              {"contents": ["a"], "options": {"beamSize": 99}})[0], 400)
        self.assertEqual(count("OK"), before_ok + 2)
        self.assertEqual(count("INVALID_ARGUMENT"), before_invalid + 1)


class ShutdownWithTricklingClients(unittest.TestCase):
    """The QA round: SIGTERM with clients trickling their requests a byte at a time (each read
    within the 10 s limit) and --grace_period_seconds 10 still ran after 90 s. Connections still
    sending hold no worker now, and the server closes them when it stops."""

    def test_sigterm_ends_the_server_though_clients_trickle(self):
        server = Server(f"--http_port={free_port()}", "--grace_period_seconds=2",
                        "--http_request_seconds=600")
        stop = threading.Event()
        closed_by_server = []

        def trickle():
            connection = socket.create_connection(("127.0.0.1", server.http_port))
            request = b"POST /v1/translate HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: a\r\n" * 500
            for byte in request:
                if stop.is_set():
                    break
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    closed_by_server.append(True)
                    break
                time.sleep(0.5)
            connection.close()

        clients = [threading.Thread(target=trickle) for _ in range(3)]
        try:
            for client in clients:
                client.start()
            time.sleep(2)
            started = time.monotonic()
            self.assertEqual(server.terminate(timeout=60), 0, "".join(server.stderr_lines))
            # The grace period (2 s) and the drain's second, not the trickle's 4 minutes.
            self.assertLess(time.monotonic() - started, 10)
            server.reader.join(30)  # the log's last lines
            log = "".join(server.stderr_lines)
            self.assertIn("xlate-server: stopped", log)
            self.assertNotIn("exiting with them open", log)
            for client in clients:
                client.join(10)
            self.assertEqual(len(closed_by_server), 3)
        finally:
            stop.set()
            for client in clients:
                client.join()
            server.kill()


class HttpsAndCors(unittest.TestCase):
    """--tls_cert/--tls_key serve HTTPS on the HTTP port too; --http_cors_origins lets the
    listed origins' pages read the answers, and no other origin's."""

    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="xlate_https_")
        cls.cert, cls.key = make_certificate(cls.workdir, "server")
        cls.server = Server(f"--tls_cert={cls.cert}", f"--tls_key={cls.key}",
                            f"--http_port={free_port()}",
                            "--http_cors_origins=https://app.example,https://other.example")
        cls.context = ssl.create_default_context(cafile=cls.cert)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def call(self, method, path, headers=None, body=None):
        request = urllib.request.Request(f"https://127.0.0.1:{self.server.http_port}{path}",
                                         data=body, method=method, headers=headers or {})
        with urllib.request.urlopen(request, context=self.context, timeout=60) as response:
            return response.status, response.headers, response.read()

    def test_https_serves_and_plain_http_does_not(self):
        self.assertTrue(any("HTTPS on 127.0.0.1" in line for line in self.server.stderr_lines))
        status, _, body = self.call("POST", "/v1/translate",
                                    {"Content-Type": "application/json"},
                                    json.dumps({"contents": ["A dog."]}).encode())
        self.assertEqual(status, 200)
        self.assertEqual(len(json.loads(body)["translations"]), 1)
        with self.assertRaises(Exception):
            urllib.request.urlopen(f"http://127.0.0.1:{self.server.http_port}/v1/models",
                                   timeout=10).read()

    def test_cors_answers_listed_origins_only(self):
        _, headers, _ = self.call("GET", "/v1/models", {"Origin": "https://app.example"})
        self.assertEqual(headers["Access-Control-Allow-Origin"], "https://app.example")
        _, headers, _ = self.call("GET", "/v1/models", {"Origin": "https://evil.example"})
        self.assertIsNone(headers["Access-Control-Allow-Origin"])
        status, headers, _ = self.call(
            "OPTIONS", "/v1/translate",
            {"Origin": "https://other.example", "Access-Control-Request-Method": "POST",
             "Access-Control-Request-Headers": "authorization, content-type"})
        self.assertEqual(status, 204)
        self.assertEqual(headers["Access-Control-Allow-Origin"], "https://other.example")
        self.assertIn("POST", headers["Access-Control-Allow-Methods"])
        self.assertIn("Authorization", headers["Access-Control-Allow-Headers"])


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed, skipped = len(result.failures) + len(result.errors), len(result.skipped)
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed or not result.wasSuccessful() else 0)
