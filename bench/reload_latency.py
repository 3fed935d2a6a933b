#!/usr/bin/env python3
"""What a model reload costs the clients of a busy server (issue 19, item 3).

    python3 bench/reload_latency.py [--model_dir models/en-de-multi30k] [--reload_dir DIR]
                                    [--clients 8] [--window_s 15] [--reloads 3]

Runs xlate-server on the shipped model with --admin_address, and --clients callers sending
Multi30k test_2016 sentences through Translate (beam 4) without pause. After --window_s
seconds it reloads the model through ModelAdmin/ReloadModel (from --reload_dir, by default the
same directory), waits --window_s seconds, and so on --reloads times. Calls are grouped by when
they started: before the first reload, during a reload (from the RPC's start to its answer),
and between reloads. Prints, per group, calls/s and the median and 99th-percentile latency,
every failed call by code, how long each reload took, and the server's resident memory at most
before and during the reloads (both models are in memory until the old one's calls are done).
--json_out writes it all.
"""
import argparse
import json
import os
import re
import signal
import sys
import threading
import time
import urllib.request

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_vs_offline import (REPO, add_multi30k_server_arguments, source_sentences,  # noqa: E402
                               start_multi30k_server)

sys.path.insert(0, os.path.join(REPO, "server", "examples"))
from translate_client import import_admin_stubs, import_stubs  # noqa: E402


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else None


def resident_bytes(metrics_port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read()
    match = re.search(rb"^xlate_process_resident_memory_bytes (\S+)$", text, re.M)
    return float(match[1]) if match else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_multi30k_server_arguments(parser, duration_s=0)
    parser.add_argument("--reload_dir", default="", help="default: the model's own directory")
    parser.add_argument("--window_s", type=float, default=15)
    parser.add_argument("--reloads", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--json_out")
    parser.set_defaults(clients=8)
    args = parser.parse_args()
    pb2, pb2_grpc = import_stubs()
    admin_pb2, admin_pb2_grpc = import_admin_stubs()
    sentences = source_sentences(args.source)

    server, port = start_multi30k_server(args, "--admin_address=127.0.0.1:0")
    admin_port = metrics_port = None
    for line in server.startup_lines:
        if match := re.search(r"ModelAdmin on 127\.0\.0\.1:(\d+)", line):
            admin_port = int(match[1])
        if match := re.search(r"metrics on port (\d+)", line):
            metrics_port = int(match[1])
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = pb2_grpc.TranslatorStub(channel)
    admin = admin_pb2_grpc.ModelAdminStub(grpc.insecure_channel(f"127.0.0.1:{admin_port}"))

    stop = threading.Event()
    calls = []  # (start, latency or None, code name)
    lock = threading.Lock()

    def client(index):
        k = index * 101
        while not stop.is_set():
            request = pb2.TranslateRequest(contents=[sentences[k % len(sentences)]])
            k += 1
            start = time.perf_counter()
            try:
                stub.Translate(request, timeout=120)
                record = (start, time.perf_counter() - start, "OK")
            except grpc.RpcError as error:
                record = (start, None, error.code().name)
            with lock:
                calls.append(record)

    memory = []  # (time, bytes)

    def sample_memory():
        while not stop.is_set():
            memory.append((time.perf_counter(), resident_bytes(metrics_port)))
            stop.wait(0.2)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
    threads.append(threading.Thread(target=sample_memory))
    for thread in threads:
        thread.start()
    reloads = []  # (start, end)
    try:
        time.sleep(args.window_s)
        for _ in range(args.reloads):
            start = time.perf_counter()
            reply = admin.ReloadModel(admin_pb2.ReloadModelRequest(model_dir=args.reload_dir),
                                      timeout=600)
            reloads.append((start, time.perf_counter()))
            print(f"reload: {reply.model_dir} loaded and warmed up in {reply.load_seconds:.2f} s "
                  f"(RPC {reloads[-1][1] - start:.2f} s)", file=sys.stderr)
            time.sleep(args.window_s)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        channel.close()
        server.send_signal(signal.SIGTERM)
        server.wait(60)

    def group(start):
        if start < reloads[0][0]:
            return "before"
        return "during" if any(a <= start < b for a, b in reloads) else "between"

    first, last = calls[0][0], calls[-1][0]
    spans = {"before": reloads[0][0] - first,
             "during": sum(b - a for a, b in reloads),
             "between": last - reloads[0][0] - sum(b - a for a, b in reloads)}
    report = {"clients": args.clients, "reloads": len(reloads),
              "reload_rpc_s": [round(b - a, 3) for a, b in reloads], "groups": {},
              "failed": {}}
    for name in ("before", "during", "between"):
        latencies = [c[1] for c in calls if c[1] is not None and group(c[0]) == name]
        report["groups"][name] = {
            "calls": len(latencies),
            "calls_per_s": round(len(latencies) / spans[name], 1) if spans[name] > 0 else None,
            "p50_ms": round(1000 * percentile(latencies, 0.5), 1) if latencies else None,
            "p99_ms": round(1000 * percentile(latencies, 0.99), 1) if latencies else None}
    for _, latency, code in calls:
        if latency is None:
            report["failed"][code] = report["failed"].get(code, 0) + 1
    in_reload = [b for t, b in memory if any(a <= t < e + 1.0 for a, e in reloads)]
    report["rss_mb_before_max"] = round(max(b for t, b in memory if t < reloads[0][0]) / 2**20, 1)
    report["rss_mb_during_max"] = round(max(in_reload) / 2**20, 1) if in_reload else None
    report["rss_mb_end"] = round(memory[-1][1] / 2**20, 1)
    print(json.dumps(report, indent=2))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(report, f, indent=2)
    sys.exit(1 if report["failed"] else 0)


if __name__ == "__main__":
    main()
