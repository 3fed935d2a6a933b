#!/usr/bin/env python3
"""What alignments cost (issue 19, item 5): the same Multi30k test_2016 sentences through
Translate with and without `alignment`, on the shipped model.

    python3 bench/alignment_cost.py [--sentences 1000] [--clients 16] [--json_out FILE]

Runs xlate-server on the shipped model. One sentence per call, --clients calls at once; the
two passes alternate --rounds times, so that a machine busy in one round hurts both. Prints
sentences/s and the median and 90th-percentile latency of each pass, their ratios, and the
bytes of a response with and without alignments.
"""
import argparse
import concurrent.futures
import json
import os
import signal
import statistics
import sys
import time

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_vs_offline import (REPO, add_multi30k_server_arguments, source_sentences,  # noqa: E402
                               start_multi30k_server)

sys.path.insert(0, os.path.join(REPO, "server", "examples"))
from translate_client import import_stubs  # noqa: E402


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def run_pass(stub, pb2, sentences, clients, aligned):
    def call(sentence):
        request = pb2.TranslateRequest(
            contents=[sentence], alignment=pb2.AlignmentOptions() if aligned else None)
        start = time.perf_counter()
        reply = stub.Translate(request, timeout=600)
        return time.perf_counter() - start, reply.ByteSize()

    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(call, sentences))
    elapsed = time.perf_counter() - start
    latencies = [r[0] for r in results]
    return {"sentences_per_s": len(sentences) / elapsed,
            "median_ms": 1000 * statistics.median(latencies),
            "p90_ms": 1000 * percentile(latencies, 0.9),
            "response_bytes": statistics.mean(r[1] for r in results)}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_multi30k_server_arguments(parser, duration_s=0)
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--json_out")
    args = parser.parse_args()
    sentences = source_sentences(args.source)[:args.sentences]
    pb2, pb2_grpc = import_stubs()
    server, port = start_multi30k_server(args)
    passes = {False: [], True: []}
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        stub = pb2_grpc.TranslatorStub(channel)
        run_pass(stub, pb2, sentences[:32], args.clients, True)  # warm-up
        for _ in range(args.rounds):
            for aligned in (False, True):
                passes[aligned].append(run_pass(stub, pb2, sentences, args.clients, aligned))
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)
    summary = {}
    for aligned, rounds in passes.items():
        name = "with_alignment" if aligned else "without"
        summary[name] = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
        row = summary[name]
        print(f"{name:15s} {row['sentences_per_s']:7.1f} sentences/s, latency median "
              f"{row['median_ms']:6.1f} ms, p90 {row['p90_ms']:6.1f} ms, response "
              f"{row['response_bytes']:7.0f} bytes")
    ratio = summary["without"]["sentences_per_s"] / summary["with_alignment"]["sentences_per_s"]
    print(f"throughput without / with alignments: {ratio:.3f}x; median latency with / without: "
          f"{summary['with_alignment']['median_ms'] / summary['without']['median_ms']:.3f}x "
          f"({len(sentences)} sentences, {args.clients} clients, {args.rounds} rounds each)")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"sentences": len(sentences), "clients": args.clients, **summary}, f,
                      indent=2)


if __name__ == "__main__":
    main()
