#!/usr/bin/env python3
"""The server's throughput when another process competes for the CPU (issue 23, item 8).

    python3 bench/cpu_contention.py [--model_dir models/en-de-multi30k] [--duration_s 15]

Runs xlate-server on the CPU twice, with the default --threads 0 (the thread count follows the
cores this process gets: engine/ops/cpu/thread_governor.h) and with --threads fixed at every
core (what --threads 0 meant before), each saturated by --clients calls of one Multi30k
test_2016 sentence, first alone and then beside --busy_loops busy loops (`while True: pass`
processes, one core each). Prints sentences/s, the server's CPU seconds and sentences per
CPU-second; the phases run one after another, --repeats times, and the median is shown.
"""
import argparse
import gzip
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_vs_offline import (REPO, add_multi30k_server_arguments, load,  # noqa: E402
                               start_server)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(args, threads, busy_loops, input_path):
    server_args = types.SimpleNamespace(server=args.server, model_dir=args.model_dir,
                                        threads=threads, max_queue_delay_ms=5)
    server, port = start_server(server_args)
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
             for _ in range(busy_loops)]
    try:
        before = cpu_seconds(server.pid)
        result = load(args, port, input_path, clients=args.clients)
        used = cpu_seconds(server.pid) - before
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
        server.send_signal(signal.SIGTERM)
        server.wait(120)
    return result["sentences_per_second"], used, result["sentences"] / used


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_multi30k_server_arguments(parser, duration_s=15)
    parser.add_argument("--busy_loops", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--load", default=os.path.join(REPO, "build", "bench", "xlate_server_load"))
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="xlate_cpu_contention_")
    input_path = os.path.join(work, "input.txt")
    with gzip.open(args.source, "rt", encoding="utf-8") as source, \
            open(input_path, "w", encoding="utf-8") as out:
        out.write(source.read())

    cores = os.cpu_count()
    runs = {}
    for _ in range(args.repeats):
        for threads in (0, cores):
            for busy in (0, args.busy_loops):
                runs.setdefault((threads, busy), []).append(
                    measure(args, threads, busy, input_path))
    print(f"Multi30k test_2016, 1 sentence per call, beam 4, {args.clients} clients, "
          f"{cores} cores, median of {args.repeats} x {args.duration_s:.0f} s")
    print(f"{'--threads':<11}{'busy loops':>11}{'sent/s':>9}{'CPU s':>8}{'sent/CPU s':>12}")
    for (threads, busy), values in runs.items():
        rate, used, per_cpu = (statistics.median(v[i] for v in values) for i in range(3))
        print(f"{threads:<11}{busy:>11}{rate:>9.1f}{used:>8.1f}{per_cpu:>12.1f}")


if __name__ == "__main__":
    main()
