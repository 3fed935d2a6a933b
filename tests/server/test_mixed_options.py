"""Many concurrent clients, each with its own mix of options (alignment on or off and its layer
and head, scores, n-best, beam sizes, length limits, repetition guards; streamed and unary): every response equals
the same request sent alone. The server batches sentences of several requests together, so an
option that did not travel with its own sentences (alignment once did not) shows up here as a
neighbour's choice or an INTERNAL error.

Run by CTest; prints 'N passed, N failed' and exits non-zero on failure.
"""
import concurrent.futures
import json
import os
import random
import unittest

from harness import MODEL_DIR, Server, pb2, sample_sentences

with open(os.path.join(MODEL_DIR, "config.json"), encoding="utf-8") as config_file:
    CONFIG = json.load(config_file)
LAST_LAYER = CONFIG["decoder_layers"] - 1
LAST_HEAD = CONFIG["decoder_attention_heads"] - 1

# Each a request's options: DecodingOptions fields, plus "alignment" (AlignmentOptions fields or
# absent) and "stream".
MIXES = [
    dict(),
    dict(alignment={}),
    dict(alignment=dict(layer=0, head=LAST_HEAD)),
    dict(alignment=dict(layer=LAST_LAYER, head=0), return_scores=True),
    dict(return_scores=True),
    dict(n_best=2, return_scores=True),
    dict(beam_size=3, n_best=3, alignment={}),
    dict(beam_size=1),
    dict(beam_size=1, alignment=dict(layer=0)),
    dict(max_extra_length=3),
    dict(max_extra_length=2, return_scores=True, alignment={}),
    dict(length_penalty=0.0, n_best=2),
    dict(stream=True),
    dict(stream=True, alignment={}),
    dict(stream=True, beam_size=2, n_best=2, return_scores=True, alignment=dict(head=0)),
    dict(stream=True, beam_size=1, max_extra_length=4),
    dict(repetition_penalty=1.4),
    dict(no_repeat_ngram_size=2, n_best=2),
    dict(beam_size=1, no_repeat_ngram_size=1, repetition_penalty=1.2),
    dict(stream=True, no_repeat_ngram_size=3),
]


def make_request(contents, mix):
    options = {k: v for k, v in mix.items() if k not in ("alignment", "stream")}
    fields = dict(contents=contents, options=pb2.DecodingOptions(**options))
    if "alignment" in mix:
        fields["alignment"] = pb2.AlignmentOptions(**mix["alignment"])
    return pb2.TranslateRequest(**fields)


class MixedOptions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # A small queue delay so that requests from different clients do share batches.
        cls.server = Server("--max_queue_delay_ms=20", "--max_beam_size=8")

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def send(self, contents, mix):
        request = make_request(contents, mix)
        if mix.get("stream"):
            messages = list(self.server.stub.TranslateStream(request, timeout=300))
            self.assertTrue(messages and messages[-1].HasField("response"), mix)
            return messages[-1].response
        return self.server.stub.Translate(request, timeout=300)

    def assert_same_response(self, got, alone, what):
        # Texts, tokens, which fields are present, layers and heads exactly; the numbers within
        # float32 summation noise (another batch may sum in another order).
        self.assertEqual(len(got.translations), len(alone.translations), what)
        for mine, theirs in zip(got.translations, alone.translations):
            self.assertEqual(mine.translated_text, theirs.translated_text, what)
            self.assertEqual([h.text for h in mine.hypotheses],
                             [h.text for h in theirs.hypotheses], what)
            self.assertEqual([h.HasField("score") for h in mine.hypotheses],
                             [h.HasField("score") for h in theirs.hypotheses], what)
            for a, b in zip(mine.hypotheses, theirs.hypotheses):
                self.assertAlmostEqual(a.score, b.score, delta=1e-3, msg=what)
            self.assertEqual(len(mine.alignments), len(theirs.alignments), what)
            for a, b in zip(mine.alignments, theirs.alignments):
                self.assertEqual((a.layer, a.head, list(a.source_tokens), list(a.target_tokens)),
                                 (b.layer, b.head, list(b.source_tokens), list(b.target_tokens)),
                                 what)
                for row_a, row_b in zip(a.target, b.target):
                    for x, y in zip(row_a.source_weights, row_b.source_weights):
                        self.assertAlmostEqual(x, y, delta=1e-3, msg=what)

    def test_every_response_equals_the_same_request_sent_alone(self):
        sentences = sample_sentences(40)
        rng = random.Random(7)
        # Each call: a mix and two or three sentences.
        calls = []
        for round_number in range(4):
            for m in range(len(MIXES)):
                start = rng.randrange(len(sentences) - 3)
                calls.append((m, sentences[start:start + rng.choice((2, 3))]))
        rng.shuffle(calls)
        alone = {}
        for m, contents in calls:
            key = (m, tuple(contents))
            if key not in alone:
                alone[key] = self.send(contents, MIXES[m])
        for m in range(len(MIXES)):
            alignment_asked = "alignment" in MIXES[m]
            for (mix, _), response in alone.items():
                if mix == m:
                    self.assertEqual(all(t.alignments for t in response.translations),
                                     alignment_asked, MIXES[m])

        def call(entry):
            m, contents = entry
            return m, contents, self.send(contents, MIXES[m])

        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            for m, contents, response in pool.map(call, calls):
                self.assert_same_response(response, alone[(m, tuple(contents))],
                                          f"options {MIXES[m]}, contents {contents}")


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed, skipped = len(result.failures) + len(result.errors), len(result.skipped)
    # "0 passed, 0 failed, N skipped" is what CTest reads as a skip (SKIP_REGULAR_EXPRESSION).
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    raise SystemExit(1 if failed else 0)
