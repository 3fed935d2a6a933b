#!/usr/bin/env python3
"""Latency against offered load: one xlate-server on --model_dir, and the open-loop load
generator (xlate_server_load --rate R: calls start at R per second whatever the answers do) at
each rate of --rates for --seconds, one sentence of --input per call, beam 4. Writes
bench/plot.py's server_latency.json ({"source", "load_unit", "results": [{offered_load, p50_ms,
p99_ms, ...}]}) so that the chart draws from it.

usage: server_latency.py --server build/server/xlate-server --load build/bench/xlate_server_load
                         --model_dir DIR --input FILE --rates 10,20,40 [--seconds 15]
                         [--json_out bench/results/server_latency.json]
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import threading


def start_server(args):
    process = subprocess.Popen([args.server, f"--model_dir={args.model_dir}", "--host=127.0.0.1",
                                "--port=0", "--metrics_port=0"], stderr=subprocess.PIPE, text=True)
    for line in process.stderr:
        match = re.search(r"on 127\.0\.0\.1:(\d+), metrics", line)
        if match:
            threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()
            return process, int(match[1])
    raise RuntimeError("xlate-server did not start")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--load", required=True)
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--rates", default="10,20,40,60,80,100,120")
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--json_out")
    args = parser.parse_args()
    process, port = start_server(args)
    results = []
    try:
        for rate in [float(r) for r in args.rates.split(",")]:
            run = subprocess.run([args.load, f"--target=127.0.0.1:{port}", f"--input={args.input}",
                                  f"--spm_model={os.path.join(args.model_dir, 'spm.model')}",
                                  f"--rate={rate}", f"--duration_s={args.seconds}"],
                                 capture_output=True, text=True, timeout=args.seconds * 20 + 120)
            report = json.loads(run.stdout.strip().splitlines()[-1])
            row = {"offered_load": rate, "p50_ms": 1000 * report["latency_p50_s"],
                   "p90_ms": 1000 * report["latency_p90_s"],
                   "p99_ms": 1000 * report["latency_p99_s"],
                   "served_per_second": report["sentences_per_second"],
                   "failures": report["failures"]}
            print(json.dumps(row), flush=True)
            results.append(row)
    finally:
        process.terminate()
        process.wait(60)
    summary = {"source": {"doc": "docs/benchmarks.md#server-under-load",
                          "machine": f"{os.cpu_count()}-core {os.uname().machine}",
                          "date": datetime.date.today().isoformat(),
                          "command": " ".join(sys.argv)},
               "load_unit": "offered load (calls/s, one sentence each)", "results": results}
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(summary, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
