"""Real text through the server: the shipped English-German model translating Multi30k
test_2016_flickr joined into paragraphs of 3-5 sentences scores the same BLEU (within 0.1) as
translating the sentences one by one, and each paragraph comes back with its own separators.

Run by CTest; prints 'N passed, N failed' and exits non-zero on failure.
"""
import gzip
import os
import random
import sys
import unittest

import sacrebleu

from harness import Server, pb2

DATA_DIR = os.environ["XLATE_DATA_DIR"]
DEFAULT_MODEL = os.environ["XLATE_DEFAULT_MODEL"]
SENTENCES = 1000  # the whole test set: some 25 s each way on one thread


def read_lines(name):
    with gzip.open(os.path.join(DATA_DIR, "multi30k", name), "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for _, line in zip(range(SENTENCES), f)]


def join(sentences, joints):
    """sentences[0] joints[0] sentences[1] ... (one joint fewer than sentences)."""
    return "".join(s + j for s, j in zip(sentences, joints + [""]))


class Paragraphs(unittest.TestCase):
    def test_paragraphs_score_as_sentences_do(self):
        sources = read_lines("test_2016_flickr.en.gz")
        references = read_lines("test_2016_flickr.de.gz")
        # Paragraphs as text is written: sentences after one another, some separated by one
        # space, some by two, some on lines of their own. A caption without final punctuation
        # (a third of Multi30k's) always ends its line: nothing could tell where it ends
        # otherwise ("... in the water Three people sit ..."), and neither does one before a
        # sentence that starts with a digit and goes on in lower case ("... union jack. 3 boys
        # are ..."), which Unicode's sentence rules (UAX #29, rule SB8) keep together.
        rng = random.Random(2017)
        paragraphs, sizes, separators = [], [], [" ", "  ", "\n", " \n"]
        start = 0
        while start < len(sources):
            size = min(rng.randint(3, 5), len(sources) - start)
            separator = separators[len(paragraphs) % len(separators)]
            joints = [separator if sources[i].rstrip()[-1:] in ".!?"
                      and not sources[i + 1][:1].isdigit() else "\n"
                      for i in range(start, start + size - 1)]
            paragraphs.append(join(sources[start:start + size], joints))
            sizes.append((start, size, joints))
            start += size
        server = Server("--threads=0", model_dir=DEFAULT_MODEL)
        try:
            def translate(contents):
                out = []
                for i in range(0, len(contents), 32):
                    reply = server.stub.Translate(
                        pb2.TranslateRequest(contents=contents[i:i + 32]), timeout=600)
                    out += [t.translated_text for t in reply.translations]
                return out

            one_by_one = translate(sources)
            as_paragraphs = translate(paragraphs)
        finally:
            server.close()
        # Each paragraph is its sentences' translations joined by its own separators ...
        joined = [join(one_by_one[start:start + size], joints) for start, size, joints in sizes]
        same = sum(a == b for a, b in zip(as_paragraphs, joined))
        self.assertEqual(same, len(paragraphs))
        # ... so the paragraphs score the BLEU of the sentences sent one by one (both scored as
        # the same paragraphs against the references joined alike).
        documents = [[join(references[start:start + size], joints)
                      for start, size, joints in sizes]]
        paragraph_bleu = sacrebleu.corpus_bleu(as_paragraphs, documents).score
        one_by_one_bleu = sacrebleu.corpus_bleu(joined, documents).score
        sentence_bleu = sacrebleu.corpus_bleu(one_by_one, [references]).score
        print(f"BLEU: sentences {sentence_bleu:.2f}; as paragraphs {paragraph_bleu:.2f} against "
              f"{one_by_one_bleu:.2f} one by one ({same} of {len(paragraphs)} identical)",
              file=sys.stderr)
        self.assertGreater(sentence_bleu, 30)  # the shipped model, not noise
        self.assertAlmostEqual(paragraph_bleu, one_by_one_bleu, delta=0.1)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed, skipped = len(result.failures) + len(result.errors), len(result.skipped)
    # "0 passed, 0 failed, N skipped" is what CTest reads as a skip (SKIP_REGULAR_EXPRESSION).
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed or not result.wasSuccessful() else 0)
