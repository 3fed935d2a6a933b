"""Hugging Face Marian and M2M100/NLLB directories served as they are (tests/data/hf/: random
tiny MarianMTModel and M2M100ForConditionalGeneration models that transformers built and saved,
with transformers' own greedy outputs): the server answers what transformers' `generate` gives,
streams, aligns and lists them; a multilingual model takes its languages from
target_language_code (and, for NLLB, source_language_code) and refuses a request without them,
naming the codes it knows.

Run by CTest; prints 'N passed, N failed' and exits non-zero on failure.
"""
import json
import os
import unittest

import grpc

from harness import REPO, Server, pb2

FIXTURES = os.path.join(REPO, "tests", "data", "hf")


def expected(name):
    with open(os.path.join(FIXTURES, name, "expected.json"), encoding="utf-8") as f:
        return json.load(f)


def greedy(contents, **fields):
    return pb2.TranslateRequest(contents=contents, options=pb2.DecodingOptions(
        beam_size=1, length_penalty=0.0), **fields)


class HfModels(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(f"--model=separate={os.path.join(FIXTURES, 'marian-swish-separate')}",
                            f"--model=mul={os.path.join(FIXTURES, 'marian-gelu-multilingual')}",
                            f"--model=nllb={os.path.join(FIXTURES, 'nllb-gelu')}",
                            "--max_beam_size=8", model_dir=None)
        cls.stub = cls.server.stub

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def test_greedy_translations_equal_transformers_generate(self):
        reference = expected("marian-swish-separate")
        sentences = reference["sentences"][:12]
        reply = self.stub.Translate(greedy(sentences, model="separate"), timeout=120)
        self.assertEqual([t.translated_text for t in reply.translations],
                         [g["text"] for g in reference["greedy"][:12]])
        # Streamed, the last message is the same response.
        *_, last = self.stub.TranslateStream(greedy(sentences, model="separate"), timeout=120)
        self.assertEqual(last.response, reply)

    def test_alignments_are_labelled_with_each_side_s_pieces(self):
        reference = expected("marian-swish-separate")
        reply = self.stub.Translate(pb2.TranslateRequest(
            contents=reference["sentences"][:2], model="separate",
            alignment=pb2.AlignmentOptions()), timeout=120)
        for translation in reply.translations:
            alignment = translation.alignments[0]
            self.assertEqual(alignment.source_tokens[-1], "</s>")
            self.assertEqual(len(alignment.target), len(alignment.target_tokens))

    def test_a_multilingual_model_takes_the_request_s_target_language(self):
        reference = expected("marian-gelu-multilingual")
        prefix = reference["source_prefix"]
        sentences = [s[len(prefix):] for s in reference["sentences"][:8]]
        reply = self.stub.Translate(greedy(sentences, model="mul", target_language_code="de-CH"),
                                    timeout=120)
        self.assertEqual([t.translated_text for t in reply.translations],
                         [g["text"] for g in reference["greedy"][:8]])
        other = self.stub.Translate(greedy(sentences, model="mul", target_language_code="fr"),
                                    timeout=120)
        self.assertNotEqual([t.translated_text for t in other.translations],
                            [t.translated_text for t in reply.translations])
        for code, fragment in (("", "name a language in target_language_code (it knows deu, "
                                    "fra, spa)"),
                               ("ja", '"ja" is not one of this model\'s languages')):
            with self.assertRaises(grpc.RpcError) as caught:
                self.stub.Translate(greedy(sentences, model="mul", target_language_code=code),
                                    timeout=60)
            self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn(fragment, caught.exception.details())

    def test_nllb_translates_between_the_request_s_languages_as_transformers(self):
        reference = expected("nllb-gelu")
        sentences = reference["sentences"][:10]
        request = greedy(sentences, model="nllb", source_language_code="en",
                         target_language_code="de")
        reply = self.stub.Translate(request, timeout=120)
        self.assertEqual([t.translated_text for t in reply.translations],
                         [g["text"] for g in reference["greedy"][:10]])
        *_, last = self.stub.TranslateStream(request, timeout=120)
        self.assertEqual(last.response, reply)
        # Beam 4 (as served) under continuous batching, French requests in between.
        beam = pb2.TranslateRequest(contents=sentences, model="nllb", source_language_code="en",
                                    target_language_code="de")
        french = pb2.TranslateRequest(contents=sentences, model="nllb",
                                      source_language_code="en", target_language_code="fr")
        futures = [self.stub.Translate.future(r, timeout=120) for r in (beam, french, beam)]
        first, other, again = (f.result() for f in futures)
        self.assertEqual(first, again)
        self.assertNotEqual(first, other)
        # Aligned: the source's pieces start with its language token, the target's with the
        # forced one.
        aligned = self.stub.Translate(pb2.TranslateRequest(
            contents=sentences[:2], model="nllb", source_language_code="en",
            target_language_code="de", alignment=pb2.AlignmentOptions()), timeout=120)
        for translation in aligned.translations:
            alignment = translation.alignments[0]
            self.assertEqual(alignment.source_tokens[0], "eng_Latn")
            self.assertEqual(alignment.target_tokens[0], "deu_Latn")
            self.assertEqual(len(alignment.target), len(alignment.target_tokens))
        for source, target, fragment in (("", "de", "name a language in source_language_code"),
                                         ("en", "ja", '"ja" is not one of this model')):
            with self.assertRaises(grpc.RpcError) as caught:
                self.stub.Translate(greedy(sentences, model="nllb", source_language_code=source,
                                           target_language_code=target), timeout=60)
            self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn(fragment, caught.exception.details())

    def test_list_models_shows_the_languages_a_multilingual_model_chooses_from(self):
        models = {m.name: m for m in self.stub.ListModels(pb2.ListModelsRequest(),
                                                          timeout=30).models}
        self.assertEqual(list(models), ["separate", "mul", "nllb"])
        self.assertEqual(sorted(models["nllb"].target_language_codes),
                         ["deu_Latn", "eng_Latn", "fra_Latn", "spa_Latn"])
        self.assertEqual(sorted(models["mul"].target_language_codes), ["deu", "fra", "spa"])
        self.assertEqual(list(models["separate"].target_language_codes), [])


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed, skipped = len(result.failures) + len(result.errors), len(result.skipped)
    # "0 passed, 0 failed, N skipped" is what CTest reads as a skip (SKIP_REGULAR_EXPRESSION).
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    raise SystemExit(1 if failed else 0)
