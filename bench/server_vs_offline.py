#!/usr/bin/env python3
"""Server throughput and latency against the offline engine, on the same sentences, same run.

    python3 bench/server_vs_offline.py --model_dir D [--sentences 256] [--duration_s 60]

1. offline: `xlate translate` (batch 32, beam 4) over the first --sentences sentences of
   newstest2014 English: sentences/s of the engine alone;
2. single: one client, one sentence per call: the unloaded latency;
3. saturation: --clients calls in flight (closed loop): the server's throughput, and its ratio
   to the offline throughput (target >= 0.9);
4. half load: calls started at half the saturation rate (open loop): p99 latency, and its ratio
   to the single-call latency (target <= 3), printed against the single call's p99 (like for
   like) and against its p50 (the stricter reading).
Every phase runs alone on the machine's cores; the server uses --threads.
"""
import argparse
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def add_multi30k_server_arguments(parser, duration_s):
    """The arguments of the benches that load a server with Multi30k test_2016 sentences and the
    shipped model (cpu_contention.py, soak.py)."""
    parser.add_argument("--model_dir", default=os.path.join(REPO, "models", "en-de-multi30k"))
    parser.add_argument("--source", default=os.path.join(REPO, "..", "shared", "data", "multi30k",
                                                         "test_2016_flickr.en.gz"))
    parser.add_argument("--duration_s", type=float, default=duration_s)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--server", default=os.path.join(REPO, "build", "server", "xlate-server"))


def source_sentences(path):
    """The non-blank lines of a gzipped text, stripped (the benches' Multi30k sources)."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def start_multi30k_server(args, *extra_flags):
    """start_server for the benches of add_multi30k_server_arguments that take --threads: a 5 ms
    queue delay."""
    return start_server(types.SimpleNamespace(
        server=args.server, model_dir=args.model_dir, threads=args.threads,
        max_queue_delay_ms=5), *extra_flags)


def start_server(args, *extra_flags):
    """xlate-server on free ports of 127.0.0.1; returns the process and its port. The process's
    startup_lines are its log up to serving."""
    process = subprocess.Popen(
        [args.server, f"--model_dir={args.model_dir}", "--host=127.0.0.1", "--port=0",
         "--metrics_port=0", f"--threads={args.threads}", "--max_batch_sentences=32",
         f"--max_queue_delay_ms={args.max_queue_delay_ms}", "--queue_capacity=100000",
         *extra_flags],
        stderr=subprocess.PIPE, text=True)
    port = None
    process.startup_lines = []
    for line in process.stderr:
        process.startup_lines.append(line)
        match = re.search(r"on 127\.0\.0\.1:(\d+),", line)
        if match:
            port = int(match[1])
            break
    if port is None:
        raise SystemExit("xlate-server did not start")
    threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()
    return process, port


def load(args, port, input_path, **flags):
    command = [args.load, f"--target=127.0.0.1:{port}", f"--input={input_path}",
               f"--spm_model={os.path.join(args.model_dir, 'spm.model')}",
               f"--duration_s={args.duration_s}", "--beam_size=4"]
    command += [f"--{key}={value}" for key, value in flags.items()]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"load generator failed: {result.stdout}{result.stderr}")
    return json.loads(result.stdout)


def offline(args, input_path):
    with open(input_path) as f:
        count = sum(1 for _ in f)
    begin = time.monotonic()
    subprocess.run([args.xlate, "translate", f"--model_dir={args.model_dir}", "--batch_size=32",
                    f"--threads={args.threads}", f"--input={input_path}", "--output=/dev/null"],
                   check=True, stderr=subprocess.DEVNULL)
    return count / (time.monotonic() - begin)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--source", default=os.path.join(REPO, "..", "shared", "data", "wmt14",
                                                         "newstest2014.en"))
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--duration_s", type=float, default=60)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max_queue_delay_ms", type=int, default=5)
    parser.add_argument("--server", default=os.path.join(REPO, "build", "server", "xlate-server"))
    parser.add_argument("--load", default=os.path.join(REPO, "build", "bench", "xlate_server_load"))
    parser.add_argument("--xlate", default=os.path.join(REPO, "build", "engine", "xlate"))
    parser.add_argument("--json_out")
    args = parser.parse_args()

    with open(args.source, encoding="utf-8") as f:
        sentences = [line.rstrip("\n") for _, line in zip(range(args.sentences), f)]
    work = tempfile.mkdtemp(prefix="xlate_server_bench_")
    input_path = os.path.join(work, "input.txt")
    with open(input_path, "w", encoding="utf-8") as f:
        f.write("\n".join(sentences) + "\n")

    results = {"offline_sentences_per_second": offline(args, input_path)}
    server, port = start_server(args)
    try:
        results["single"] = load(args, port, input_path, clients=1)
        results["saturation"] = load(args, port, input_path, clients=args.clients)
        half_rate = results["saturation"]["sentences_per_second"] / 2
        results["half_load"] = load(args, port, input_path, rate=half_rate)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(120)

    offline_rate = results["offline_sentences_per_second"]
    print(f"{len(sentences)} newstest2014 sentences, beam 4, {args.threads} threads")
    print(f"offline engine (batch 32): {offline_rate:.2f} sentences/s")
    print(f"{'phase':<12}{'sent/s':>9}{'tok/s':>9}{'p50 s':>9}{'p90 s':>9}{'p99 s':>9}")
    for phase in ("single", "saturation", "half_load"):
        r = results[phase]
        print(f"{phase:<12}{r['sentences_per_second']:>9.2f}{r['tokens_per_second']:>9.1f}"
              f"{r['latency_p50_s']:>9.3f}{r['latency_p90_s']:>9.3f}{r['latency_p99_s']:>9.3f}")
    results["saturation_over_offline"] = results["saturation"]["sentences_per_second"] / offline_rate
    for reference in ("p99", "p50"):
        results[f"half_load_p99_over_single_{reference}"] = (
            results["half_load"]["latency_p99_s"] / results["single"][f"latency_{reference}_s"])
    print(f"server at saturation / offline throughput: {results['saturation_over_offline']:.3f}"
          " (target >= 0.9)")
    print(f"p99 at half load / single-call p99: {results['half_load_p99_over_single_p99']:.2f}, "
          f"/ single-call p50: {results['half_load_p99_over_single_p50']:.2f} (target <= 3)")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
