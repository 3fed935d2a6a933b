"""bench/plot.py draws the documentation's charts from the committed results: every chart that
docs/img/ holds is drawn again from bench/results/*.json (into a temporary folder), each result
names its source, every picture the docs show exists, and the server-latency chart, which no
committed result feeds yet, draws from a result in its format.

Run:  python3 tests/docs/test_plot.py      (CTest: docs_plot; needs matplotlib, else skipped)
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLOT = os.path.join(REPO, "bench", "plot.py")
RESULTS = os.path.join(REPO, "bench", "results")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

try:
    import matplotlib  # noqa: F401
    HAVE_MATPLOTLIB = True
except ImportError:
    HAVE_MATPLOTLIB = False


def plot(results, out):
    return subprocess.run([sys.executable, PLOT, "--results", results, "--out", out],
                          capture_output=True, text=True, timeout=300)


class Results(unittest.TestCase):
    def test_every_result_names_its_source(self):
        paths = glob.glob(os.path.join(RESULTS, "*.json"))
        self.assertTrue(paths, "bench/results/ holds no results")
        for path in paths:
            with open(path, encoding="utf-8") as f:
                source = json.load(f).get("source")
            self.assertIsInstance(source, dict, f"{path}: no \"source\" object")
            for key in ("doc", "machine", "date", "command"):
                self.assertTrue(source.get(key), f"{path}: source has no {key!r}")
            self.assertRegex(source["date"], r"^\d{4}-\d\d-\d\d", path)
            doc = source["doc"].split("#")[0].split()[0]
            self.assertTrue(os.path.exists(os.path.join(REPO, doc)), f"{path}: {doc} is not there")

    def test_every_picture_the_docs_show_exists(self):
        for doc in ["README.md"] + glob.glob(os.path.join(REPO, "docs", "*.md")):
            path = os.path.join(REPO, doc)
            with open(path, encoding="utf-8") as f:
                for image in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", f.read()):
                    target = os.path.normpath(os.path.join(os.path.dirname(path), image))
                    self.assertTrue(os.path.exists(target), f"{doc} shows {image}: not there")


@unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is not installed")
class Charts(unittest.TestCase):
    def test_the_committed_charts_draw_from_the_committed_results(self):
        with tempfile.TemporaryDirectory() as out:
            result = plot(RESULTS, out)
            self.assertEqual(result.returncode, 0, result.stderr)
            drawn = sorted(os.listdir(out))
            committed = sorted(os.path.basename(p)
                               for p in glob.glob(os.path.join(REPO, "docs", "img", "*.png")))
            self.assertEqual(drawn, committed, "docs/img/ and what bench/plot.py draws differ:\n"
                             + result.stdout)
            for name in drawn:
                with open(os.path.join(out, name), "rb") as f:
                    data = f.read()
                self.assertTrue(data.startswith(PNG_SIGNATURE), name)
                self.assertGreater(len(data), 10000, f"{name} is nearly empty")

    def test_server_latency_draws_from_its_format(self):
        with tempfile.TemporaryDirectory() as work:
            results, out = os.path.join(work, "results"), os.path.join(work, "out")
            os.makedirs(results)
            with open(os.path.join(results, "server_latency.json"), "w") as f:
                json.dump({"source": {"doc": "docs/benchmarks.md", "machine": "m",
                                      "date": "2026-11-28", "command": "c"},
                           "load_unit": "offered sentences/s",
                           "results": [{"offered_load": load, "p50_ms": 10 + load / 10,
                                        "p99_ms": 30 + load / 5} for load in (50, 100, 200)]}, f)
            result = plot(results, out)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(os.listdir(out), ["server_latency.png"], result.stdout)
            self.assertIn("decoding: no results, skipped", result.stdout)

    def test_a_result_without_its_source_is_refused(self):
        with tempfile.TemporaryDirectory() as work:
            shutil.copy(os.path.join(RESULTS, "nllb_load.json"), work)
            with open(os.path.join(work, "nllb_load.json")) as f:
                data = json.load(f)
            del data["source"]
            with open(os.path.join(work, "nllb_load.json"), "w") as f:
                json.dump(data, f)
            result = plot(work, os.path.join(work, "out"))
            self.assertNotEqual(result.returncode, 0)
            self.assertIn("no \"source\"", result.stderr)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed, skipped = len(result.failures) + len(result.errors), len(result.skipped)
    # "0 passed, 0 failed, N skipped" is what CTest reads as a skip (SKIP_REGULAR_EXPRESSION).
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    raise SystemExit(1 if failed else 0)
