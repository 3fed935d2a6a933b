#!/usr/bin/env python3
"""What a server costs in memory and start-up, the way a deploy meets it: xlate-server on a model
directory, from the command to serving, idle, then under a closed loop of gRPC clients.

    python3 bench/server_memory.py --model_dir DIR [--compute_type float32] [--clients 32]
        [--duration_s 60] [--source FILE] [--json_out OUT] [--label NAME]

For each --compute_type (repeatable; float32 when none):
  * start_seconds: from starting the process to its "serving" line (the model loaded and its
    caches made);
  * load_peak_mib: the process's peak resident memory by then (VmHWM), and load_peak_ratio, that
    over the bytes of the directory's *.safetensors files;
  * idle_mib: resident memory (VmRSS) a second after serving;
  * then `xlate_server_load --clients N` (one sentence a call, beam 4, sentences of --source)
    for --duration_s: under_load_peak_mib (VmHWM at the end), end_mib (VmRSS at the end) and the
    sentences/s and the failed calls (by gRPC code) that the load generator reports.
A model with random weights (bench/make_opus_shaped_model.py) never ends a sentence early: each
runs to the server's length limit, which is the heaviest load its clients can make.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_vs_offline import REPO, start_server  # noqa: E402
from soak import status_bytes  # noqa: E402

MIB = 2**20


def measure(args, compute_type):
    server_args = types.SimpleNamespace(server=args.server, model_dir=args.model_dir,
                                        threads=args.threads, max_queue_delay_ms=5)
    started = time.perf_counter()
    server, port = start_server(server_args, f"--compute_type={compute_type}")
    try:
        start_seconds = time.perf_counter() - started
        load_peak = status_bytes(server.pid, "VmHWM")
        time.sleep(1)
        idle = status_bytes(server.pid)
        spm = next(path for name in ("spm.model", "target.spm", "sentencepiece.bpe.model")
                   for path in [os.path.join(args.model_dir, name)] if os.path.exists(path))
        load = subprocess.run(
            [args.load, f"--target=127.0.0.1:{port}", f"--clients={args.clients}",
             f"--duration_s={args.duration_s}", f"--input={args.source}", "--beam_size=4",
             f"--spm_model={spm}"],
            capture_output=True, text=True)
        if load.returncode not in (0, 1):
            raise SystemExit(f"xlate_server_load failed: {load.stderr}")
        under_load_peak = status_bytes(server.pid, "VmHWM")
        end = status_bytes(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=60)
    report = json.loads(load.stdout.strip().splitlines()[-1])
    weight_bytes = sum(os.path.getsize(path)
                       for path in glob.glob(os.path.join(args.model_dir, "*.safetensors")))
    return {
        "start_seconds": round(start_seconds, 2),
        "weight_mib": round(weight_bytes / MIB, 1),
        "load_peak_mib": round(load_peak / MIB, 1),
        "load_peak_ratio": round(load_peak / weight_bytes, 3),
        "idle_mib": round(idle / MIB, 1),
        "under_load_peak_mib": round(under_load_peak / MIB, 1),
        "end_mib": round(end / MIB, 1),
        "sentences_per_second": round(report["sentences_per_second"], 2),
        "failed_calls": report["failures"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--compute_type", action="append", default=[])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--duration_s", type=float, default=60)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--source", default=os.path.join(REPO, "..", "shared", "data", "wmt14",
                                                         "newstest2014.en"))
    parser.add_argument("--server", default=os.path.join(REPO, "build", "server", "xlate-server"))
    parser.add_argument("--load", default=os.path.join(REPO, "build", "bench", "xlate_server_load"))
    parser.add_argument("--label", default=None, help="the results' key (the directory's name)")
    parser.add_argument("--json_out")
    args = parser.parse_args()
    label = args.label or os.path.basename(os.path.normpath(args.model_dir))
    results = {}
    for compute_type in args.compute_type or ["float32"]:
        result = measure(args, compute_type)
        results[f"{label} {compute_type}"] = result
        print(f"{label} {compute_type}: " + ", ".join(f"{k} {v}" for k, v in result.items()),
              flush=True)
    if args.json_out:
        previous = {}
        if os.path.exists(args.json_out):
            with open(args.json_out, encoding="utf-8") as f:
                previous = json.load(f)
        previous.update(results)
        with open(args.json_out, "w", encoding="utf-8") as f:
            json.dump(previous, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
