#!/usr/bin/env python3
"""Time to the first stable word of TranslateStream against its full latency (issue 19, item 2).

    python3 bench/stream_latency.py [--model_dir models/en-de-multi30k] [--requests 200]

Runs xlate-server on the shipped model and sends Multi30k test_2016 text through
TranslateStream, one entry per call: single sentences, and paragraphs of five sentences. Each
call records when its first partial with text arrives (the first stable words) and when the
response arrives, from the moment the call starts; the same calls through Translate give what
a caller waits for without streaming (and whether streaming costs anything). Beam 4
(the default) and greedy, with one client at a time and with --clients at once. Prints the
median and 90th percentile of both and their ratio; --json_out writes them.
"""
import argparse
import concurrent.futures
import gzip
import json
import os
import signal
import statistics
import sys
import time

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_vs_offline import REPO, add_multi30k_server_arguments, start_multi30k_server  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "server", "examples"))
from translate_client import import_stubs  # noqa: E402


def texts(source, count, sentences_per_text):
    with gzip.open(source, "rt", encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    out = []
    for i in range(count):
        part = lines[(i * sentences_per_text) % len(lines):][:sentences_per_text]
        # One sentence per line: captions without final punctuation still end there.
        out.append("\n".join(part))
    return out


def timed_stream(stub, pb2, text, beam_size):
    request = pb2.TranslateRequest(contents=[text],
                                   options=pb2.DecodingOptions(beam_size=beam_size))
    start = time.perf_counter()
    first = None
    for message in stub.TranslateStream(request, timeout=600):
        if first is None and message.HasField("partial") and message.partial.text.strip():
            first = time.perf_counter() - start
    full = time.perf_counter() - start
    return first if first is not None else full, full


def timed_unary(stub, pb2, text, beam_size):
    request = pb2.TranslateRequest(contents=[text],
                                   options=pb2.DecodingOptions(beam_size=beam_size))
    start = time.perf_counter()
    stub.Translate(request, timeout=600)
    return time.perf_counter() - start


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_multi30k_server_arguments(parser, duration_s=0)
    parser.add_argument("--requests", type=int, default=200, help="calls per measurement")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--json_out")
    args = parser.parse_args()
    pb2, pb2_grpc = import_stubs()
    server, port = start_multi30k_server(args)
    results = []
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        stub = pb2_grpc.TranslatorStub(channel)
        timed_stream(stub, pb2, "A dog runs.", 4)  # warm-up
        for sentences in (1, 5):
            inputs = texts(args.source, args.requests, sentences)
            for beam_size in (4, 1):
                for clients in (1, args.clients):
                    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
                        timings = list(pool.map(
                            lambda text: timed_stream(stub, pb2, text, beam_size), inputs))
                        unary = list(pool.map(
                            lambda text: timed_unary(stub, pb2, text, beam_size), inputs))
                    first = [t[0] for t in timings]
                    full = [t[1] for t in timings]
                    row = {"sentences_per_text": sentences, "beam_size": beam_size,
                           "clients": clients, "calls": len(timings),
                           "first_word_median_ms": 1000 * statistics.median(first),
                           "first_word_p90_ms": 1000 * percentile(first, 0.9),
                           "full_median_ms": 1000 * statistics.median(full),
                           "full_p90_ms": 1000 * percentile(full, 0.9),
                           "translate_median_ms": 1000 * statistics.median(unary)}
                    row["median_ratio"] = row["full_median_ms"] / row["first_word_median_ms"]
                    results.append(row)
                    print(f"{sentences} sentence(s)/text, beam {beam_size}, {clients:2d} "
                          f"client(s): first stable word {row['first_word_median_ms']:7.1f} ms "
                          f"(p90 {row['first_word_p90_ms']:7.1f}), full "
                          f"{row['full_median_ms']:7.1f} ms (p90 {row['full_p90_ms']:7.1f}); "
                          f"full / first {row['median_ratio']:.2f}x; Translate "
                          f"{row['translate_median_ms']:7.1f} ms", flush=True)
        channel.close()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(120)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
