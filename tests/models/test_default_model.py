"""Regression test of the shipped English-German model: translate the first 200 sentences of
Multi30k test_2016_flickr with beam 4 and check that sacreBLEU stays within 0.5 of the value
recorded in the model card (models/en-de-multi30k/README.md, the line
`regression: first 200 sentences of test_2016_flickr, beam 4: sacreBLEU NN.NN`)."""
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
MODEL = os.path.join(REPO, "models", "en-de-multi30k")
SENTENCES = 200


def first_lines(path, count):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for _, line in zip(range(count), f)]


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


if __name__ == "__main__":
    unittest.main(verbosity=2)
