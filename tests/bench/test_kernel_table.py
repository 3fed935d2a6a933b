"""bench/gpu/kernel_table.py: per-step kernel times from an Nsight Compute CSV in the format
`ncu --metrics gpu__time_duration.sum --csv` writes (program output mixed in), for a decoding
plan and for training steps: units, grouping of launches by kernel, names with and without
namespaces and signatures, and the errors for a bad unit, an empty profile and bad --steps.

Run:  python3 tests/bench/test_kernel_table.py   (no GPU, no build needed)
"""
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "bench", "gpu", "kernel_table.py")
HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
          '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
          '"Metric Value"\n')


def row(index, kernel, unit, value, metric="gpu__time_duration.sum"):
    return (f'"{index}","4242","xlate-trainer","127.0.0.1","{kernel}","1","7","(256, 1, 1)",'
            f'"(80, 1, 1)","0","9.0","Command line profiler metrics","{metric}","{unit}",'
            f'"{value}"\n')


class KernelTable(unittest.TestCase):
    def run_script(self, csv_text, *arguments):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "kernels.csv")
            with open(path, "w", encoding="utf-8") as f:
                f.write(csv_text)
            extra = []
            for argument in arguments:
                if argument.startswith("PLAN:"):
                    plan = os.path.join(directory, "plan.tsv")
                    with open(plan, "w", encoding="utf-8") as f:
                        f.write(argument[len("PLAN:"):])
                    extra += ["--plan", plan]
                else:
                    extra.append(argument)
            return subprocess.run([sys.executable, SCRIPT, path] + extra, capture_output=True,
                                  text=True)

    def test_training_steps_group_launches_and_convert_units(self):
        csv_text = ("training on NVIDIA H200 ...\n==PROF== Connected to process 4242\n" + HEADER
                    + row(0, "void xlate::kernels::(anonymous namespace)::convert_matrices_kernel"
                             "<__nv_bfloat16, float>(__nv_bfloat16 *, const float *, long, long, "
                             "long, long, long, bool)", "usecond", "30")
                    + row(1, "convert_matrices_kernel<__nv_bfloat16, float>", "nsecond", "30,000")
                    + row(2, "sm90_xmma_gemm_bf16f32_bf16f32_f32_tn_n_tilesize128x128x64",
                          "msecond", "0.24")
                    + row(3, "add_layer_norm_kernel", "usecond", "6")
                    + row(3, "add_layer_norm_kernel", "usecond", "99", metric="sm__cycles.sum")
                    + "step 1/3 | loss 9.5\n")
        result = self.run_script(csv_text, "--steps", "3")
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        # 30 + 30 + 240 + 6 = 306 us over 3 steps; 4 launches (the other metric ignored).
        self.assertEqual(lines[0], "3 training steps, 102.0 us of kernel time per step, "
                                   "1 launches per step")
        table = {line[:70].strip(): line[70:].split() for line in lines[2:]}
        self.assertEqual(list(table), [
            "sm90_xmma_gemm_bf16f32_bf16f32_f32_tn_n_tilesize128x128x64",
            "convert_matrices_kernel<__nv_bfloat16, float>", "add_layer_norm_kernel"])
        self.assertEqual(table["convert_matrices_kernel<__nv_bfloat16, float>"],
                         ["20.00", "2", "19.6%"])
        self.assertEqual(table["add_layer_norm_kernel"], ["2.00", "1", "2.0%"])

    def test_a_decoding_plan_sums_its_batches_decode_lengths(self):
        csv_text = HEADER + row(0, "log_softmax_top_k_kernel", "usecond", "50")
        result = self.run_script(csv_text, "PLAN:0\t20\t32\n1\t30\t32\n")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue(result.stdout.startswith("50 decoding steps, 1.0 us of kernel time"),
                        result.stdout)

    def test_bad_input_is_refused_naming_it(self):
        result = self.run_script(HEADER + row(0, "k", "cycle", "5"), "--steps", "1")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("unknown time unit 'cycle'", result.stderr)
        result = self.run_script("==PROF== nothing profiled\n", "--steps", "1")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("no gpu__time_duration.sum rows", result.stderr)
        result = self.run_script(HEADER, "--steps", "0")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("--steps must be >= 1, got 0", result.stderr)
        result = self.run_script(HEADER)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("one of the arguments --plan --steps is required", result.stderr)


if __name__ == "__main__":
    unittest.main()
