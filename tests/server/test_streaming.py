"""TranslateStream on real text: the shipped English-German model streaming Multi30k
test_2016_flickr (single sentences and paragraphs of three), with beam 4 and greedy, four
streams at once. For every entry, each partial is a prefix of the final text, partials only
grow, none ends inside a word, and a complete one is the final text; the last message equals
Translate's response to the same request. Partials must come before the end (the stream
streams).

Run by CTest; prints 'N passed, N failed' and exits non-zero on failure.
"""
import concurrent.futures
import gzip
import os
import sys
import unittest

from harness import Server, pb2

DATA_DIR = os.environ["XLATE_DATA_DIR"]
DEFAULT_MODEL = os.environ["XLATE_DEFAULT_MODEL"]
SINGLE = 160      # sentences sent as entries of their own
PARAGRAPHS = 40   # then paragraphs of 3 sentences each
PER_REQUEST = 8   # entries


def read_sources():
    with gzip.open(os.path.join(DATA_DIR, "multi30k", "test_2016_flickr.en.gz"), "rt",
                   encoding="utf-8") as f:
        return [line.rstrip("\n") for _, line in zip(range(SINGLE + 3 * PARAGRAPHS), f)]


def entries():
    sources = read_sources()
    texts = sources[:SINGLE]
    for start in range(SINGLE, SINGLE + 3 * PARAGRAPHS, 3):
        parts = sources[start:start + 3]
        # A caption without final punctuation ends its line (nothing else tells where it ends).
        joints = [" " if p.rstrip()[-1:] in ".!?" and not n[:1].isdigit() else "\n"
                  for p, n in zip(parts, parts[1:])]
        texts.append(parts[0] + joints[0] + parts[1] + joints[1] + parts[2])
    return texts


def stream(stub, request):
    """(partials [(entry, text, complete)], the last message's response, partials before it)."""
    partials, response = [], None
    for message in stub.TranslateStream(request, timeout=600):
        if response is not None:
            raise AssertionError("a message after the response")
        if message.HasField("partial"):
            p = message.partial
            partials.append((p.entry, p.text, p.complete))
        else:
            response = message.response
    return partials, response


class Streaming(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server("--threads=0", model_dir=DEFAULT_MODEL)
        cls.texts = entries()

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def check_streams(self, options):
        requests = [pb2.TranslateRequest(contents=self.texts[i:i + PER_REQUEST], options=options)
                    for i in range(0, len(self.texts), PER_REQUEST)]
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            streamed = list(pool.map(lambda r: stream(self.server.stub, r), requests))
        unary = [self.server.stub.Translate(r, timeout=600) for r in requests]
        checked = partial_words = 0
        for request, (partials, response), expected in zip(requests, streamed, unary):
            self.assertIsNotNone(response, "the stream ended without its response")
            self.assertEqual(response, expected)
            for entry in range(len(request.contents)):
                final = response.translations[entry].translated_text
                shown = [(text, complete) for e, text, complete in partials if e == entry]
                # A complete partial comes once, last, unless the response overtook it (the
                # server drops what waits when the response is ready).
                completes = [i for i, (_, complete) in enumerate(shown) if complete]
                self.assertLessEqual(len(completes), 1)
                if completes:
                    self.assertEqual(completes[0], len(shown) - 1)
                    self.assertEqual(shown[-1][0], final)
                before = ""
                for text, complete in shown:
                    self.assertTrue(final.startswith(text), f"{text!r} is not a prefix of "
                                                            f"{final!r}")
                    self.assertTrue(len(text) > len(before) or complete,
                                    f"{text!r} does not grow {before!r}")
                    if not complete and text:
                        # Whole words only: the final text goes on with a space there (or the
                        # partial ends with the space before a sentence yet to show).
                        self.assertTrue(text[-1].isspace() or final[len(text)].isspace(),
                                        f"{text!r} ends inside a word of {final!r}")
                        partial_words += 1
                    before = text
                checked += 1
        self.assertEqual(checked, len(self.texts))
        return partial_words

    def test_beam_search_streams_stable_prefixes(self):
        partial_words = self.check_streams(pb2.DecodingOptions())
        print(f"beam 4: {partial_words} partials before the complete texts of "
              f"{len(self.texts)} entries", file=sys.stderr)
        self.assertGreater(partial_words, len(self.texts))

    def test_greedy_streams_every_word(self):
        partial_words = self.check_streams(pb2.DecodingOptions(beam_size=1))
        print(f"greedy: {partial_words} partials before the complete texts of "
              f"{len(self.texts)} entries", file=sys.stderr)
        self.assertGreater(partial_words, len(self.texts))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed, skipped = len(result.failures) + len(result.errors), len(result.skipped)
    # "0 passed, 0 failed, N skipped" is what CTest reads as a skip (SKIP_REGULAR_EXPRESSION).
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed or not result.wasSuccessful() else 0)
