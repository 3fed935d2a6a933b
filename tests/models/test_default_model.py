"""Regression test of the shipped English-German model: translate the first 200 sentences of
Multi30k test_2016_flickr with beam 4 and check that sacreBLEU stays within 0.5 of the value
recorded in the model card (models/en-de-general/README.md, the line
`regression: first 200 sentences of test_2016_flickr, beam 4: sacreBLEU NN.NN`).

Compute type int8: the whole of test_2016_flickr in int8 scores within 0.3 BLEU of float32,
also on AVX2 without VNNI (ONEDNN_MAX_CPU_ISA=AVX2, whose int8 sums take another path), and a
processor limited to AVX is refused with a message naming what int8 needs."""
import gzip
import json
import os
import re
import subprocess
import tempfile
import unittest

REPO = os.environ["XLATE_REPO"]
XLATE = os.environ["XLATE_BIN"]
DATA = os.environ["XLATE_DATA_DIR"]
MODEL = os.path.join(REPO, "models", "en-de-general")
SENTENCES = 200


def first_lines(path, count):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for _, line in zip(range(count), f)]


def test_set(side):
    return os.path.join(DATA, "multi30k", "test_2016_flickr.%s.gz" % side)


def translate_file(source_path, output_path, compute_type, env=None):
    return subprocess.run([XLATE, "translate", "--model_dir", MODEL, "--input", source_path,
                           "--output", output_path, "--split_sentences=false",
                           "--compute_type", compute_type],
                          capture_output=True, text=True, timeout=1200,
                          env=dict(os.environ, **(env or {})))


def sacrebleu(reference_path, hypothesis_path):
    scored = subprocess.run([XLATE, "bleu", "--ref", reference_path, "--hyp", hypothesis_path,
                             "--json"], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(scored.stdout)["sacrebleu"]["score"]


class DefaultModelTest(unittest.TestCase):
    def test_bleu_matches_the_model_card(self):
        with open(os.path.join(MODEL, "README.md"), encoding="utf-8") as card:
            match = re.search(r"regression: first 200 sentences of test_2016_flickr, beam 4: "
                              r"sacreBLEU (\d+\.\d+)", card.read())
        self.assertIsNotNone(match, "the model card has no regression line")
        expected = float(match.group(1))
        sources = first_lines(os.path.join(DATA, "multi30k", "test_2016_flickr.en.gz"), SENTENCES)
        references = first_lines(os.path.join(DATA, "multi30k", "test_2016_flickr.de.gz"),
                                 SENTENCES)
        with tempfile.TemporaryDirectory() as work:
            reference_path = os.path.join(work, "ref.de")
            with open(reference_path, "w", encoding="utf-8") as f:
                f.write("\n".join(references) + "\n")
            # Without --model_dir: the tool's default is the shipped model.
            translated = subprocess.run([XLATE, "translate", "--beam_size", "4"],
                                        input="\n".join(sources) + "\n", capture_output=True,
                                        text=True, timeout=1200)
            self.assertEqual(translated.returncode, 0, translated.stderr)
            scored = subprocess.run([XLATE, "bleu", "--ref", reference_path, "--json"],
                                    input=translated.stdout, capture_output=True, text=True,
                                    timeout=120)
            self.assertEqual(scored.returncode, 0, scored.stderr)
        bleu = json.loads(scored.stdout)["sacrebleu"]["score"]
        print(f"sacreBLEU {bleu:.2f}, model card {expected:.2f}")
        self.assertLessEqual(abs(bleu - expected), 0.5)


class Int8Test(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.TemporaryDirectory()
        cls.source = os.path.join(cls.work.name, "src.en")
        cls.reference = os.path.join(cls.work.name, "ref.de")
        for side, path in (("en", cls.source), ("de", cls.reference)):
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(first_lines(test_set(side), 10**6)) + "\n")
        cls.float32_output = os.path.join(cls.work.name, "float32.de")
        done = translate_file(cls.source, cls.float32_output, "float32")
        assert done.returncode == 0, done.stderr
        cls.float32_bleu = sacrebleu(cls.reference, cls.float32_output)

    @classmethod
    def tearDownClass(cls):
        cls.work.cleanup()

    def check_int8_close_to_float32(self, env):
        output = os.path.join(self.work.name, "int8.de")
        done = translate_file(self.source, output, "int8", env)
        self.assertEqual(done.returncode, 0, done.stderr)
        bleu = sacrebleu(self.reference, output)
        with open(output, encoding="utf-8") as a, open(self.float32_output, encoding="utf-8") as b:
            same = sum(x == y for x, y in zip(a, b))
        print(f"{env or 'native ISA'}: int8 sacreBLEU {bleu:.2f}, float32 {self.float32_bleu:.2f}, "
              f"{same} of 1000 translations identical")
        self.assertLessEqual(abs(bleu - self.float32_bleu), 0.3)
        self.assertGreaterEqual(same, 700)

    def test_int8_scores_within_0_3_bleu_of_float32(self):
        self.check_int8_close_to_float32({})

    def test_int8_on_avx2_without_vnni_too(self):
        self.check_int8_close_to_float32({"ONEDNN_MAX_CPU_ISA": "AVX2"})

    def test_a_processor_without_avx2_is_refused_naming_the_need(self):
        done = translate_file(self.source, os.path.join(self.work.name, "refused.de"), "int8",
                              {"ONEDNN_MAX_CPU_ISA": "AVX"})
        self.assertEqual(done.returncode, 2, done.stderr)  # the tool's exit for bad options
        self.assertIn("int8 matrix products need AVX2 at least", done.stderr)
        self.assertIn("this processor offers AVX", done.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
