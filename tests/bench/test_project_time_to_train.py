"""bench/project_time_to_train.py: the ring all-reduce's formula, the model's parameter count
against the paper's Table 3, the conservative choice between the two compute scalings, the
overlap bounds, the efficiency's fall with the bus bandwidth, and the CLI on a summary in the
exact format bench/compare_pytorch_training.py prints, with its errors for bad input.

Run:  python3 tests/bench/test_project_time_to_train.py   (no GPU, no build needed)
"""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "bench", "project_time_to_train.py")

spec = importlib.util.spec_from_file_location("project_time_to_train", SCRIPT)
ttt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ttt)


def xlate_entry(precision, tokens_per_second, steps=10, tokens=480000, device="cuda"):
    """One xlate result as compare_pytorch_training.run_xlate returns it."""
    seconds = tokens / tokens_per_second if tokens_per_second else 12.0
    return {"system": "xlate", "device": device, "precision": precision, "threads": 2,
            "steps": steps, "tokens": tokens, "seconds": seconds,
            "tokens_per_second": tokens_per_second, "seconds_per_step": seconds / steps,
            "final_loss": 9.2, "peak_memory_bytes": 21 * 2**30 if device == "cuda" else None}


def pytorch_entry(precision, tokens_per_second, system="pytorch", gpu="NVIDIA H100 80GB HBM3"):
    """One PyTorch result as bench/pytorch_transformer_train.py prints it, plus the "tokens" that
    compare_pytorch_training.run_pytorch adds."""
    source, target, steps = 240000, 240000, 10
    seconds = (source + target) / tokens_per_second
    return {"system": system, "torch_version": "2.5.1", "device": "cuda", "gpu": gpu,
            "precision": precision, "compiled": system == "pytorch-compiled",
            "peak_memory_bytes": 25 * 2**30, "threads": 2, "preset": "base", "layers": 6,
            "d_model": 512, "d_ff": 2048, "heads": 8, "dropout": 0.1, "vocab_size": 8000,
            "attention": "sdpa", "parameters": 48242496, "max_tokens": 50000,
            "warmup_steps": 2, "steps": steps, "source_tokens": source, "target_tokens": target,
            "padded_tokens": 50000 * steps, "seconds": seconds,
            "tokens_per_second": tokens_per_second, "seconds_per_step": seconds / steps,
            "final_loss": 9.1, "other_cpu_share": 0.0, "tokens": source + target}


def summary(results, ratio=0.8):
    return {"results": results, "ratio": ratio}


def measured(gpu="h100-sxm", precision="bf16", tokens_per_second=150000.0, preset="base",
             vocabulary=8000, tokens_per_step=48000.0):
    """The measurement dict the projection takes, built like measurement() builds it."""
    step = tokens_per_step / tokens_per_second
    optimizer = ttt.optimizer_seconds(ttt.parameter_counts(preset, vocabulary)["total"], gpu)
    return {"gpu": gpu, "precision": precision, "preset": preset, "vocabulary": vocabulary,
            "tokens_per_second": tokens_per_second, "tokens_per_step": tokens_per_step,
            "seconds_per_step": step, "optimizer_s": optimizer,
            "seconds_per_token": (step - optimizer) / tokens_per_step}


class Formulas(unittest.TestCase):
    def test_ring_all_reduce_moves_two_n_minus_one_over_n_of_the_bytes(self):
        # 1 GB over 8 GPUs at 100 GB/s: 2 x 7/8 x 1e9 / 1e11 = 17.5 ms.
        self.assertAlmostEqual(ttt.ring_all_reduce_seconds(1e9, 8, 100e9), 0.0175, places=12)
        # Two GPUs: each sends and receives half, twice: exactly bytes / bandwidth.
        self.assertAlmostEqual(ttt.ring_all_reduce_seconds(1e9, 2, 100e9), 0.01, places=12)
        # The base model's fp32 gradient (252,477,984 bytes) over 8 P100 on NVLink at 80 GB/s.
        self.assertAlmostEqual(ttt.ring_all_reduce_seconds(252477984, 8, 80e9),
                               1.75 * 252477984 / 80e9, places=12)

    def test_parameter_counts_match_the_papers_table_3(self):
        base = ttt.parameter_counts("base")
        # 37,000 x 512 embedding + 37,000 bias + 6 encoder layers of 3,152,384 + 6 decoder layers
        # of 4,204,032 (counted by hand from engine/model_weights.h).
        self.assertEqual(base["total"], 18944000 + 37000 + 6 * 3152384 + 6 * 4204032)
        self.assertEqual(base["total"], 63119496)
        self.assertLess(abs(base["total"] / 65e6 - 1), 0.05)          # Table 3: 65 M
        big = ttt.parameter_counts("big")
        self.assertLess(abs(big["total"] / 213e6 - 1), 0.01)          # Table 3: 213 M
        # The bench's Multi30k model (vocabulary 8,000): the ~48 M the data-parallel doc quotes,
        # 8,000 x 512 + 8,000 + the same layers.
        self.assertEqual(ttt.parameter_counts("base", 8000)["total"],
                         4096000 + 8000 + 6 * 3152384 + 6 * 4204032)

    def test_big_model_costs_about_three_and_a_half_times_the_base_per_token(self):
        ratio = ttt.training_flops_per_token("big") / ttt.training_flops_per_token("base")
        self.assertGreater(ratio, 3.2)
        self.assertLess(ratio, 3.6)
        # By hand at L = 30: forward 44.41 M FLOPs per source token, 82.67 M per target token
        # (37.89 M of them the output projection); x 3 for training; averaged over the two.
        self.assertAlmostEqual(ttt.training_flops_per_token("base", sentence_tokens=30) / 1e6,
                               190.61, places=1)

    def test_a_smaller_vocabulary_costs_fewer_flops(self):
        self.assertLess(ttt.training_flops_per_token("base", 8000),
                        ttt.training_flops_per_token("base", 37000))


class Projection(unittest.TestCase):
    def test_the_projection_takes_the_slower_of_the_two_scalings(self):
        # H100 -> P100: the FLOP/s ratio (989 / 10.6: xlate's fp16 products sum in float32,
        # at a P100's fp32 rate) is far worse than the bandwidth ratio (3,350 / 732): compute
        # follows FLOP/s.
        p = ttt.project(measured(), "base", "dgx1-p100")
        self.assertGreater(p["compute_s_by_flops"], p["compute_s_by_bandwidth"])
        self.assertEqual(p["compute_s"], p["compute_s_by_flops"])
        self.assertEqual(p["precision"], "fp16")          # no bf16 on the P100
        # A100 80GB -> A100 40GB: the same FLOP/s, less bandwidth: compute follows bandwidth.
        p = ttt.project(measured(gpu="a100-sxm4-80gb"), "base", "dgx-a100")
        self.assertAlmostEqual(p["compute_s_by_bandwidth"] / p["compute_s_by_flops"],
                               2039.0 / 1555.0, places=9)
        self.assertEqual(p["compute_s"], p["compute_s_by_bandwidth"])

    def test_each_gpu_computes_an_eighth_of_the_papers_step(self):
        m = measured()
        p = ttt.project(m, "base", "dgx-h100")
        self.assertEqual(p["tokens_per_gpu_per_step"], 6250)
        # On the measured GPU itself both scalings are 1; the model's vocabulary grows from
        # 8,000 to 37,000, which the ratio of FLOPs per token carries.
        ratio = ttt.training_flops_per_token("base") / ttt.training_flops_per_token("base", 8000)
        self.assertAlmostEqual(p["compute_s"], m["seconds_per_token"] * ratio * 6250, places=12)

    def test_efficiency_falls_when_the_bus_bandwidth_falls(self):
        nvlink = ttt.project(measured(), "base", "dgx1-p100", bus_gbps=80.0)
        pcie = ttt.project(measured(), "base", "dgx1-p100", bus_gbps=15.75)
        self.assertAlmostEqual(pcie["all_reduce_s"] / nvlink["all_reduce_s"], 80 / 15.75)
        self.assertEqual(pcie["compute_s"], nvlink["compute_s"])
        for bound in ("no_overlap", "overlapped"):
            self.assertLess(pcie["efficiency"][bound], nvlink["efficiency"][bound])
        self.assertLess(pcie["lowest_efficiency"], nvlink["lowest_efficiency"])
        # The published systems too: the PCIe box's lowest efficiency is below the DGX-1's.
        self.assertLess(ttt.project(measured(), "base", "pcie-p100")["lowest_efficiency"],
                        ttt.project(measured(), "base", "dgx1-p100")["lowest_efficiency"])

    def test_overlap_bounds(self):
        p = ttt.project(measured(), "big", "pcie-p100", hidden_fraction=0.5)
        s = p["step_s"]
        self.assertLessEqual(s["overlapped"], s["no_overlap"])
        self.assertAlmostEqual(s["no_overlap"],
                               p["compute_s"] + p["all_reduce_s"] + p["optimizer_s"], places=12)
        self.assertAlmostEqual(s["measured_hiding"], p["compute_s"] + 0.5 * p["all_reduce_s"]
                               + p["optimizer_s"], places=12)
        # The shared embedding's gradient is final last: at least its all-reduce stays exposed.
        embedding = 4 * ttt.parameter_counts("big")["embedding"]
        self.assertAlmostEqual(p["last_bucket_s"], ttt.ring_all_reduce_seconds(
            embedding, 8, 15.75e9), places=12)
        self.assertGreaterEqual(s["overlapped"],
                                p["compute_s"] + p["last_bucket_s"] + p["optimizer_s"] - 1e-12)
        # --bucket_mb 0 is one all-reduce after the pass: nothing overlaps.
        one = ttt.project(measured(), "big", "pcie-p100", bucket_mib=0)
        self.assertAlmostEqual(one["step_s"]["overlapped"], one["step_s"]["no_overlap"], places=12)
        # A bus so slow that the all-reduce outlasts the backward pass: the step is the forward
        # pass plus the whole reduction.
        slow = ttt.project(measured(), "base", "dgx-h100", bus_gbps=0.5)
        forward = slow["compute_s"] / 3
        self.assertAlmostEqual(slow["step_s"]["overlapped"],
                               forward + slow["all_reduce_s"] + slow["optimizer_s"], places=9)

    def test_step_times_interpolate_with_the_hidden_fraction(self):
        t = ttt.step_times(0.3, 0.01, 0.2, 0.05, hidden_fraction=0.0)
        self.assertAlmostEqual(t["measured_hiding"], t["no_overlap"])
        t = ttt.step_times(0.3, 0.01, 0.2, 0.05, hidden_fraction=1.0)
        self.assertAlmostEqual(t["measured_hiding"], 0.31)
        # forward 0.1 + max(backward 0.2, 0.15) + last bucket 0.05 + optimizer 0.01.
        self.assertAlmostEqual(t["overlapped"], 0.36)


class CommandLine(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                              timeout=60)

    def bench_log(self, results):
        """A log like run_checks.sh's trainbench.log: the benchmark's lines, then its summary."""
        return self.write("trainbench.log",
                          "xlate             fp32   40000.0 tok/s    1.200 s/step\n"
                          "xlate / pytorch (fp32 eager) = 0.800\n"
                          + json.dumps(summary(results)) + "\n")

    def standard_results(self):
        return [xlate_entry("fp32", 40000.0), xlate_entry("fp16", 140000.0),
                xlate_entry("bf16", 150000.0), pytorch_entry("fp32", 50000.0),
                pytorch_entry("bf16", 160000.0), pytorch_entry("fp32", 60000.0,
                                                               system="pytorch-compiled")]

    def test_projects_from_the_benchmarks_summary(self):
        log = self.bench_log(self.standard_results())
        out = os.path.join(self.dir.name, "time_to_train.json")
        result = self.run_script("--measured_json", log, "--json_out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        report = json.loads(result.stdout.strip().splitlines()[-1])
        with open(out, encoding="utf-8") as f:
            self.assertEqual(json.load(f), report)
        m = report["measured"]
        # The fastest xlate entry, on the GPU, preset and vocabulary that PyTorch's entries name.
        self.assertEqual((m["precision"], m["tokens_per_second"]), ("bf16", 150000.0))
        self.assertEqual((m["gpu"], m["preset"], m["vocabulary"]), ("h100-sxm", "base", 8000))
        self.assertEqual(m["tokens_per_step"], 48000.0)
        self.assertEqual(m["parameters"], m["pytorch_parameters"])
        systems = {(p["preset"], p["system"]) for p in report["projections"]}
        self.assertEqual(systems, {(preset, system) for preset in ("base", "big")
                                   for system in ttt.SYSTEMS})
        for heading in ("## Base model: 100,000 steps (paper: 0.4 s/step on 8 P100, 12 hours)",
                        "## Big model: 300,000 steps (paper: 1.0 s/step on 8 P100, 3.5 days)",
                        "| 8 x P100 SXM2, NVLink 1 (DGX-1) | fp16 |",
                        "| 8 x A100 SXM4 40GB, NVSwitch (DGX A100) | bf16 |",
                        "214,656 |"):
            self.assertIn(heading, result.stdout)

    def test_a_run_with_16bit_activations_is_named_as_such(self):
        entry = xlate_entry("bf16", 200000.0)
        entry["activations"] = "16bit"
        log = self.bench_log(self.standard_results() + [entry])
        result = self.run_script("--measured_json", log)
        self.assertEqual(result.returncode, 0, result.stderr)
        report = json.loads(result.stdout.strip().splitlines()[-1])
        self.assertEqual(report["measured"]["tokens_per_second"], 200000.0)
        self.assertEqual(report["measured"]["activations"], "16bit")
        self.assertIn("bf16, 16-bit activations, one", result.stdout)
        # By precision, the first listed run of it: fp32 activations, as the trainer's default.
        result = self.run_script("--measured_json", log, "--precision", "bf16")
        report = json.loads(result.stdout.strip().splitlines()[-1])
        self.assertEqual(report["measured"]["activations"], "fp32")
        self.assertNotIn("16-bit activations", result.stdout)

    def test_precision_and_gpu_chosen_by_flag(self):
        log = self.bench_log(self.standard_results())
        result = self.run_script("--measured_json", log, "--precision", "fp32",
                                 "--measured_gpu", "h200-sxm", "--hidden_fraction", "0.9")
        self.assertEqual(result.returncode, 0, result.stderr)
        report = json.loads(result.stdout.strip().splitlines()[-1])
        self.assertEqual(report["measured"]["precision"], "fp32")
        self.assertEqual(report["measured"]["gpu"], "h200-sxm")
        self.assertTrue(all(p["precision"] == "fp32" for p in report["projections"]))
        self.assertIn("90% hidden", result.stdout)

    def test_throughput_by_hand(self):
        result = self.run_script("--tokens_per_second", "150000", "--precision", "bf16",
                                 "--measured_gpu", "NVIDIA H100 80GB HBM3",
                                 "--measured_tokens_per_step", "6250", "--bucket_mb", "25")
        self.assertEqual(result.returncode, 0, result.stderr)
        report = json.loads(result.stdout.strip().splitlines()[-1])
        self.assertEqual(report["measured"]["tokens_per_step"], 6250)
        self.assertEqual(report["bucket_mb"], 25)
        self.assertNotIn("compute below is optimistic", result.stdout)

    def assert_refused(self, expected, *args):
        result = self.run_script(*args)
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertIn(expected, result.stderr)
        self.assertNotIn("Traceback", result.stderr)

    def test_bad_inputs_are_refused_with_a_message_naming_the_problem(self):
        missing = os.path.join(self.dir.name, "nowhere.json")
        self.assert_refused(f"--measured_json {missing}: cannot read it", "--measured_json",
                            missing, "--measured_gpu", "h100-sxm")
        self.assert_refused("the file is empty", "--measured_json", self.write("empty", "\n"),
                            "--measured_gpu", "h100-sxm")
        self.assert_refused("its last line is not JSON", "--measured_json",
                            self.write("crashed.log", '{"results": []}\nTraceback (most recent '
                                       'call last):\n  RuntimeError: CUDA out of memory\n'),
                            "--measured_gpu", "h100-sxm")
        self.assert_refused('has no "results" list', "--measured_json",
                            self.write("other.json", '{"ratio": 1.0}\n'),
                            "--measured_gpu", "h100-sxm")
        self.assert_refused("no xlate entry in its results (systems: pytorch, pytorch-compiled)",
                            "--measured_json", self.bench_log(
                                [pytorch_entry("fp32", 5e4),
                                 pytorch_entry("fp32", 6e4, system="pytorch-compiled")]))
        self.assert_refused("xlate was measured on cpu; the projection needs a GPU",
                            "--measured_json", self.bench_log([xlate_entry("fp32", 1077.5,
                                                                           device="cpu")]),
                            "--measured_gpu", "h100-sxm")
        self.assert_refused("no xlate fp16 entry (precisions: fp32)", "--measured_json",
                            self.bench_log([xlate_entry("fp32", 4e4)]), "--precision", "fp16",
                            "--measured_gpu", "h100-sxm")
        self.assert_refused("the measured throughput must be a positive number of tokens/s",
                            "--measured_json", self.bench_log([xlate_entry("bf16", 0.0)]),
                            "--measured_gpu", "h100-sxm")
        for value in ("0", "-5"):
            self.assert_refused("the measured throughput must be a positive number of tokens/s",
                                "--tokens_per_second", value, "--precision", "bf16",
                                "--measured_gpu", "h100-sxm")
        self.assert_refused("--tokens_per_second needs --precision", "--tokens_per_second",
                            "1e5", "--measured_gpu", "h100-sxm")
        self.assert_refused("--measured_gpu is needed", "--measured_json",
                            self.bench_log([xlate_entry("bf16", 1.5e5)]))
        result = self.run_script("--tokens_per_second", "1e5", "--precision", "bf16",
                                 "--measured_gpu", "Tesla K80")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--measured_gpu 'Tesla K80' is not a known GPU; known: ", result.stderr)
        for key in ttt.GPUS:
            self.assertIn(key, result.stderr)
        self.assert_refused("Tesla V100 SXM2 has no bf16", "--tokens_per_second", "1e5",
                            "--precision", "bf16", "--measured_gpu", "v100-sxm2")
        self.assert_refused("--hidden_fraction must be between 0 and 1", "--tokens_per_second",
                            "1e5", "--precision", "bf16", "--measured_gpu", "h100-sxm",
                            "--hidden_fraction", "1.5")
        self.assert_refused("shorter than the optimizer's memory traffic", "--tokens_per_second",
                            "1e12", "--precision", "bf16", "--measured_gpu", "h100-sxm")
        self.assert_refused("one of the arguments --measured_json --tokens_per_second is required",
                            "--measured_gpu", "h100-sxm")


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed, skipped = len(result.failures) + len(result.errors), len(result.skipped)
    # "0 passed, 0 failed, N skipped" is what CTest reads as a skip (SKIP_REGULAR_EXPRESSION).
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    raise SystemExit(1 if failed else 0)
