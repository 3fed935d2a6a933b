"""Glossaries through the server on the default model: a named glossary (--glossary NAME=FILE)
and inline entries put their target terms into every n-best hypothesis, sentences without terms
translate as without a glossary, terms are reported per entry, case folding on request, a term
that cannot fit is reported, bad glossaries are refused by name, HTML blocks take them, and
SIGHUP re-reads the file (keeping the old glossary while the file does not parse).

Run by CTest; prints 'N passed, N failed' and exits non-zero on failure.
"""
import html.parser
import os
import signal
import sys
import tempfile
import unittest

import grpc

from harness import Server, pb2, wait_until

DEFAULT_MODEL = os.environ["XLATE_DEFAULT_MODEL"]
RESTART = "Please restart the server before installing the update."
MEETING = "The meeting has been moved to Tuesday afternoon."
STATION = "Where is the nearest train station?"


def element_texts(page, tag):
    """The text inside each `tag` element of an HTML page, joined, as Python's parser reads it."""
    class Reader(html.parser.HTMLParser):
        def __init__(self):
            super().__init__()
            self.depth, self.text = 0, ""

        def handle_starttag(self, name, attrs):
            self.depth += name == tag

        def handle_endtag(self, name):
            self.depth -= name == tag

        def handle_data(self, data):
            if self.depth:
                self.text += data
    reader = Reader()
    reader.feed(page)
    return reader.text


def glossary_request(contents, glossary="", entries=(), ignore_case=False, **options):
    return pb2.TranslateRequest(
        contents=contents, options=pb2.DecodingOptions(**options),
        glossary_config=pb2.GlossaryConfig(
            glossary=glossary, ignore_case=ignore_case,
            entries=[pb2.GlossaryEntry(source=s, target=t) for s, t in entries]))


class GlossaryServer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.directory = tempfile.TemporaryDirectory()
        cls.terms = os.path.join(cls.directory.name, "terms.tsv")
        with open(cls.terms, "w", encoding="utf-8") as f:
            f.write("# IT terms\nserver\tRechner\nupdate\tAktualisierung\n")
        cls.server = Server(f"--glossary=it={cls.terms}", model_dir=DEFAULT_MODEL)
        cls.stub = cls.server.stub

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        cls.directory.cleanup()

    def translate(self, request):
        return self.stub.Translate(request, timeout=120)

    def test_targets_are_in_every_hypothesis_and_other_sentences_are_unchanged(self):
        plain = self.translate(pb2.TranslateRequest(contents=[RESTART, MEETING, STATION]))
        # The model's own choices, which the glossary replaces.
        self.assertNotIn("Rechner", plain.translations[0].translated_text)
        self.assertNotIn("Besprechung", plain.translations[1].translated_text)
        reply = self.translate(glossary_request(
            [RESTART, MEETING, STATION], glossary="it",
            entries=[("meeting", "Besprechung")], n_best=3))
        for entry, targets in ((0, ["Rechner", "Aktualisierung"]), (1, ["Besprechung"])):
            translation = reply.translations[entry]
            self.assertEqual(len(translation.hypotheses), 3)
            for hypothesis in translation.hypotheses:
                for target in targets:
                    self.assertIn(target, hypothesis.text)
            self.assertEqual(sorted((t.source, t.target, t.applied) for t in
                                    translation.glossary_terms),
                             sorted((s, t, True) for s, t in zip(
                                 ["server", "update"] if entry == 0 else ["meeting"], targets)))
        # No term in it: the sentence decodes as it does without a glossary, even beside
        # constrained ones in the same batch.
        self.assertEqual(reply.translations[2].hypotheses[0].text,
                         plain.translations[2].translated_text)
        self.assertEqual(len(reply.translations[2].glossary_terms), 0)
        # Streamed: every partial a prefix of its entry's final text, the last message the
        # unary response (stable prefixes hold under the constrained search too).
        request = glossary_request([RESTART, MEETING], glossary="it",
                                   entries=[("meeting", "Besprechung")])
        unary = self.translate(request)
        stream = list(self.stub.TranslateStream(request, timeout=120))
        self.assertEqual(stream[-1].response, unary)
        for message in stream[:-1]:
            self.assertTrue(unary.translations[message.partial.entry].translated_text.startswith(
                message.partial.text), message.partial.text)
        self.assertEqual(list(self.stub.ListModels(pb2.ListModelsRequest(),
                                                   timeout=10).glossaries), ["it"])

    def test_inline_entries_override_and_case_folding_is_asked_for(self):
        shouting = "RESTART THE SERVER NOW."
        exact = self.translate(glossary_request([shouting], glossary="it"))
        self.assertEqual(len(exact.translations[0].glossary_terms), 0)
        folded = self.translate(glossary_request(
            [shouting], glossary="it", entries=[("server", "Dienstrechner")], ignore_case=True))
        terms = folded.translations[0].glossary_terms
        self.assertEqual([(t.source, t.target, t.applied) for t in terms],
                         [("SERVER", "Dienstrechner", True)])
        self.assertIn("Dienstrechner", folded.translations[0].translated_text)

    def test_a_term_that_cannot_fit_is_reported_not_dropped_silently(self):
        reply = self.translate(glossary_request(
            ["The update."], entries=[("update", "Aktualisierungsverwaltungsprogrammpaket " * 2)],
            max_extra_length=2))
        term = reply.translations[0].glossary_terms[0]
        self.assertFalse(term.applied)
        self.assertIn("do not fit the sentence's output limit", term.note)

    def test_constrained_sentences_search_with_their_own_beam(self):
        # options.constrained_beam_size: the sentence with terms searches as it would at that
        # beam; the one without keeps beam_size, in the same request.
        wide = self.translate(glossary_request([RESTART], glossary="it", beam_size=8, n_best=2))
        plain = self.translate(pb2.TranslateRequest(contents=[STATION]))
        reply = self.translate(glossary_request([RESTART, STATION], glossary="it", n_best=2,
                                                constrained_beam_size=8))
        self.assertEqual([h.text for h in reply.translations[0].hypotheses],
                         [h.text for h in wide.translations[0].hypotheses])
        self.assertEqual(reply.translations[1].hypotheses[0].text,
                         plain.translations[0].translated_text)
        narrow = self.translate(glossary_request([RESTART], glossary="it", n_best=2))
        self.assertNotEqual([h.text for h in narrow.translations[0].hypotheses],
                            [h.text for h in wide.translations[0].hypotheses])
        for beam, named in ((9, "in [n_best, 8] (--max_beam_size)"), (1, "in [n_best = 2")):
            with self.assertRaises(grpc.RpcError) as caught:
                self.translate(glossary_request([RESTART], glossary="it", n_best=2,
                                                constrained_beam_size=beam))
            self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn(f"options.constrained_beam_size = {beam}", caught.exception.details())
            self.assertIn(named, caught.exception.details())

    def test_html_blocks_take_the_glossary_and_keep_their_tags(self):
        page = ('<p>Please <b>restart</b> the <a href="/s">server</a> before installing the '
                '<em>update</em>.</p><p>Where is the nearest train station?</p>')
        request = glossary_request([page], glossary="it")
        request.mime_type = "text/html"
        translation = self.translate(request).translations[0]
        text = translation.translated_text
        self.assertIn("Rechner", text)
        self.assertIn("Aktualisierung", text)
        for tag in ("<p>", "<b>", "</b>", '<a href="/s">', "</a>", "<em>", "</em>"):
            self.assertIn(tag, text)
        self.assertEqual([(t.source, t.applied) for t in translation.glossary_terms],
                         [("server", True), ("update", True)])
        # The tags around the source terms hold their targets (the terms' words are linked to
        # each other, whatever the attention of the forced words), read by Python's parser.
        self.assertIn("Rechner", element_texts(text, "a"))
        self.assertIn("Aktualisierung", element_texts(text, "em"))

    def test_bad_glossaries_are_refused_by_name(self):
        cases = [
            (glossary_request([RESTART], glossary="legal"), grpc.StatusCode.NOT_FOUND,
             'glossary_config.glossary "legal" is not one of this server\'s glossaries (it)'),
            (glossary_request([RESTART], entries=[("", "x")]), grpc.StatusCode.INVALID_ARGUMENT,
             "glossary_config.entries[0]: the source term is empty"),
            (glossary_request([RESTART], entries=[("a", "b"), ("a", "c")]),
             grpc.StatusCode.INVALID_ARGUMENT, "is on glossary_config.entries[0] too"),
        ]
        for request, code, fragment in cases:
            with self.assertRaises(grpc.RpcError, msg=fragment) as caught:
                self.translate(request)
            self.assertEqual(caught.exception.code(), code, caught.exception.details())
            self.assertIn(fragment, caught.exception.details())

    def test_sighup_rereads_the_file_and_keeps_a_broken_one(self):
        def targets():
            reply = self.translate(glossary_request([RESTART], glossary="it"))
            return sorted(t.target for t in reply.translations[0].glossary_terms)

        with open(self.terms, encoding="utf-8") as f:
            original = f.read()
        try:
            with open(self.terms, "w", encoding="utf-8") as f:
                f.write("server\tRechner\nthis line has no tab\n")
            self.server.process.send_signal(signal.SIGHUP)
            self.assertTrue(wait_until(lambda: 'glossary "it" kept' in "".join(self.server.stderr_lines), 30),
                            "".join(self.server.stderr_lines[-20:]))
            self.assertEqual(targets(), ["Aktualisierung", "Rechner"])  # the old one, whole
            with open(self.terms, "w", encoding="utf-8") as f:
                f.write("update\tNeuerung\n")
            self.server.process.send_signal(signal.SIGHUP)
            self.assertTrue(wait_until(lambda: targets() == ["Neuerung"], 30))
        finally:
            with open(self.terms, "w", encoding="utf-8") as f:
                f.write(original)
            self.server.process.send_signal(signal.SIGHUP)
            wait_until(lambda: targets() == ["Aktualisierung", "Rechner"], 30)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed, skipped = len(result.failures) + len(result.errors), len(result.skipped)
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed or not result.wasSuccessful() else 0)
