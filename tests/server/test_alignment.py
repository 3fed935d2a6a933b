"""Alignments through the server (TranslateRequest.alignment): their shape, that each target
word of the shipped English-German model attends to the English word it translates, the
options' limits, JSON clients, and the same alignments at the end of a TranslateStream.

Run by CTest; prints 'N passed, N failed' and exits non-zero on failure.
"""
import os
import unittest

import grpc
from google.protobuf import json_format

from harness import Server, pb2

DEFAULT_MODEL = os.environ["XLATE_DEFAULT_MODEL"]

# German words of the shipped model's translations and the English piece each should attend to
# most (its translation), as a reader of the sentences would align them.
EXPECTED_WORDS = {
    "▁Hund": "▁dog", "▁Schnee": "▁snow", "▁Männer": "▁men", "▁Fußball": "▁soccer",
    "▁Park": "▁park", "▁Frau": "▁woman", "▁Kleid": "▁dress", "▁singt": "▁sings",
    "▁Bühne": "▁stage", "▁roten": "▁red",
}


def words(pieces):
    return "".join(pieces).replace("▁", " ").strip()


def word_of(pieces, index):
    """The whole word (its pieces joined, "▁" first) that pieces[index] is part of: a model
    whose vocabulary cuts "sings" into "▁s" "ings" attends to one of the pieces."""
    start = index
    while start > 0 and not pieces[start].startswith("▁"):
        start -= 1
    end = index + 1
    while end < len(pieces) and not pieces[end].startswith("▁") and pieces[end] != "</s>":
        end += 1
    return "".join(pieces[start:end]).rstrip(".,;:!?")  # "▁snow" "." is the word "▁snow"


class Alignments(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(model_dir=DEFAULT_MODEL)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def translate(self, contents, **fields):
        return self.server.stub.Translate(pb2.TranslateRequest(contents=contents, **fields),
                                          timeout=120)

    def test_each_sentence_has_rows_of_weights_over_its_source(self):
        contents = ["A dog runs through the snow. Two men are playing soccer in a park.",
                    "  ", "A woman in a red dress sings on a stage."]
        reply = self.translate(contents, alignment=pb2.AlignmentOptions())
        self.assertEqual([len(t.alignments) for t in reply.translations], [2, 0, 1])
        first = reply.translations[0]
        self.assertEqual(" ".join(a.target_text for a in first.alignments), first.translated_text)
        self.assertEqual(first.alignments[1].source_text, "Two men are playing soccer in a park.")
        for translation in reply.translations:
            for alignment in translation.alignments:
                self.assertEqual(alignment.layer, 2)  # the last of the model's 3
                self.assertEqual(alignment.head, -1)
                self.assertEqual(alignment.source_tokens[-1], "</s>")
                self.assertEqual(words(alignment.source_tokens[:-1]), alignment.source_text)
                self.assertEqual(words(alignment.target_tokens), alignment.target_text)
                self.assertEqual(len(alignment.target), len(alignment.target_tokens))
                for row in alignment.target:
                    self.assertEqual(len(row.source_weights), len(alignment.source_tokens))
                    self.assertAlmostEqual(sum(row.source_weights), 1.0, places=4)
                    self.assertTrue(all(w >= 0 for w in row.source_weights))
        # Asked for nothing, nothing comes.
        plain = self.translate(contents)
        self.assertEqual(sum(len(t.alignments) for t in plain.translations), 0)
        self.assertEqual([t.translated_text for t in plain.translations],
                         [t.translated_text for t in reply.translations])

    def test_target_words_attend_to_the_words_they_translate(self):
        contents = ["A dog runs through the snow.", "Two men are playing soccer in a park.",
                    "A woman in a red dress sings on a stage."]
        reply = self.translate(contents, alignment=pb2.AlignmentOptions())
        checked = []
        for translation in reply.translations:
            alignment = translation.alignments[0]
            for piece, row in zip(alignment.target_tokens, alignment.target):
                if piece not in EXPECTED_WORDS:
                    continue
                weights = list(row.source_weights)
                attended = word_of(list(alignment.source_tokens), weights.index(max(weights)))
                checked.append((piece, attended))
        self.assertGreaterEqual(len(checked), 8, checked)
        wrong = [(piece, attended) for piece, attended in checked
                 if attended != EXPECTED_WORDS[piece]]
        self.assertEqual(wrong, [], checked)

    def test_one_head_and_another_layer(self):
        reply = self.translate(["A dog runs through the snow."],
                               alignment=pb2.AlignmentOptions(layer=-3, head=1))
        alignment = reply.translations[0].alignments[0]
        self.assertEqual((alignment.layer, alignment.head), (0, 1))
        average = self.translate(["A dog runs through the snow."],
                                 alignment=pb2.AlignmentOptions(layer=0))
        self.assertNotEqual(list(alignment.target[1].source_weights),
                            list(average.translations[0].alignments[0].target[1].source_weights))

    def test_options_out_of_range_are_refused_naming_the_field(self):
        for options, expected in [
                (pb2.AlignmentOptions(layer=3), "alignment.layer = 3 is out of range"),
                (pb2.AlignmentOptions(layer=-4), "alignment.layer = -4 is out of range"),
                (pb2.AlignmentOptions(head=4), "alignment.head = 4 is out of range"),
                (pb2.AlignmentOptions(head=-2), "alignment.head = -2 is out of range")]:
            with self.assertRaises(grpc.RpcError) as error:
                self.translate(["A dog runs."], alignment=options)
            self.assertEqual(error.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn(expected, error.exception.details())

    def test_a_json_client_asks_with_an_empty_object(self):
        request = json_format.Parse('{"contents": ["A dog runs."], "alignment": {}}',
                                    pb2.TranslateRequest())
        reply = json_format.MessageToDict(self.server.stub.Translate(request, timeout=60))
        alignment = reply["translations"][0]["alignments"][0]
        self.assertEqual(alignment["sourceTokens"][-1], "</s>")
        self.assertEqual(len(alignment["target"]), len(alignment["targetTokens"]))

    def test_the_stream_ends_with_the_same_alignments(self):
        request = pb2.TranslateRequest(contents=["Two men are playing soccer in a park."],
                                       alignment=pb2.AlignmentOptions(head=0))
        last = list(self.server.stub.TranslateStream(request, timeout=60))[-1]
        self.assertTrue(last.HasField("response"))
        self.assertEqual(last.response, self.server.stub.Translate(request, timeout=60))
        self.assertEqual(len(last.response.translations[0].alignments), 1)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed, skipped = len(result.failures) + len(result.errors), len(result.skipped)
    # "0 passed, 0 failed, N skipped" is what CTest reads as a skip (SKIP_REGULAR_EXPRESSION).
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    raise SystemExit(1 if failed else 0)
