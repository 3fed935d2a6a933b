#!/usr/bin/env python3
"""What an NLLB-600M-shaped model costs to load and to run, xlate against transformers on the
same directory (bench/make_nllb_shaped_model.py) and the same sentences, on the CPU: wall time of
the load, peak resident memory of the process (load and translation), and sentences/s of beam 4
with outputs limited to source + EXTRA tokens (random weights rarely stop on their own).

    python3 bench/nllb_load.py MODEL_DIR SOURCES [--sentences 20] [--threads 2] [--extra 20]
        [--xlate build/cli/xlate] [--json_out FILE]

Each side runs in a process of its own (peak memory is the process's). xlate's load time is its
wall time less the translation time it reports.
"""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def transformers_side(args):
    import torch
    from transformers import AutoTokenizer, M2M100ForConditionalGeneration
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    model = M2M100ForConditionalGeneration.from_pretrained(args.model).eval()
    tokenizer = AutoTokenizer.from_pretrained(args.model, src_lang="eng_Latn")
    loaded = time.perf_counter() - start
    lines = open(args.sources, encoding="utf-8").read().splitlines()[:args.sentences]
    target = tokenizer.convert_tokens_to_ids("deu_Latn")
    start = time.perf_counter()
    with torch.inference_mode():
        for line in lines:
            ids = tokenizer(line, return_tensors="pt").input_ids
            model.generate(ids, num_beams=4, length_penalty=0.6, forced_bos_token_id=target,
                           max_new_tokens=ids.shape[1] - 1 + args.extra)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"load_seconds": loaded, "translate_seconds": seconds,
                      "sentences_per_second": len(lines) / seconds, "peak_rss_mb": peak}))


def xlate_side(args, compute_type):
    with tempfile.TemporaryDirectory() as work:
        sources = os.path.join(work, "sources")
        with open(sources, "w", encoding="utf-8") as f:
            f.write("\n".join(open(args.sources, encoding="utf-8").read().splitlines()
                              [:args.sentences]) + "\n")
        env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
        start = time.perf_counter()
        run = subprocess.run(
            ["/usr/bin/time", "-f", "peak_kb=%M", args.xlate, "translate", "--model_dir",
             args.model, "--source_language", "en", "--target_language", "de",
             f"--compute_type={compute_type}", "--max_extra_length", str(args.extra),
             "--input", sources, "--output", os.path.join(work, "out")],
            env=env, capture_output=True, text=True, check=True)
        wall = time.perf_counter() - start
    seconds = float(re.search(r"sentences\), ([0-9.]+) s", run.stderr).group(1))
    peak = int(re.search(r"peak_kb=(\d+)", run.stderr).group(1)) / 1024
    return {"load_seconds": wall - seconds, "translate_seconds": seconds,
            "sentences_per_second": args.sentences / seconds, "peak_rss_mb": peak}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("sources")
    parser.add_argument("--sentences", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--extra", type=int, default=20)
    parser.add_argument("--xlate", default=os.path.join(HERE, "..", "build", "cli", "xlate"))
    parser.add_argument("--json_out")
    parser.add_argument("--transformers_only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.transformers_only:
        return transformers_side(args)
    results = {"xlate float32": xlate_side(args, "float32"),
               "xlate int8": xlate_side(args, "int8")}
    run = subprocess.run([sys.executable, __file__, args.model, args.sources, "--sentences",
                          str(args.sentences), "--threads", str(args.threads), "--extra",
                          str(args.extra), "--transformers_only"],
                         capture_output=True, text=True, check=True)
    results["transformers float32"] = json.loads(run.stdout.strip().splitlines()[-1])
    for name, result in results.items():
        print(f"{name:22s} load {result['load_seconds']:6.1f} s  peak {result['peak_rss_mb']:7.0f} MB"
              f"  {result['sentences_per_second']:.3f} sentences/s")
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
