#!/usr/bin/env python3
"""Fairness: a light client's one-sentence calls while another client floods the server.

    python3 bench/fairness.py [--model_dir models/en-de-multi30k] [--flood_sentences 3600]
                              [--probes 10] [--json_out FILE]

Measures, against the shipped model on the CPU, the latency of one-sentence calls:
  idle        nobody else is calling;
  own         while a flooding client has --flood_sentences queued (requests of 100 sentences
              sent at once), from a client of its own (another connection): the server shares
              the engine between clients (server/batching_policy.h, fair_start);
  flooders    one such call sent on the flooding client's own connection: within one client
              sentences go first come, first served, which is what every client got before
              the fair queue (one missed a 10 s deadline behind 3,662 queued sentences).
Prints each case's median and maximum in seconds and the ratios to idle; --json_out writes them.
Also the server's resident memory after 3 requests of 2,000,000 empty entries (refused on the
wire by --max_entries_per_request), against before them.
"""
import argparse
import json
import os
import statistics
import sys
import time

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_vs_offline import (REPO, add_multi30k_server_arguments, source_sentences,  # noqa: E402
                               start_multi30k_server)
from soak import status_bytes  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "server", "examples"))
from translate_client import import_stubs  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_multi30k_server_arguments(parser, duration_s=0)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--flood_sentences", type=int, default=3600)
    parser.add_argument("--probes", type=int, default=10)
    parser.add_argument("--json_out")
    args = parser.parse_args()
    pb2, pb2_grpc = import_stubs()
    sentences = source_sentences(args.source)
    probe_text = "A man in a blue shirt is standing on a ladder."

    server, port = start_multi30k_server(args, "--max_queued_sentences_per_client=100000")
    target = f"127.0.0.1:{port}"
    # Each channel its own connection (gRPC shares one between channels otherwise).
    probe_channel = grpc.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)])
    flood_channel = grpc.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)])
    probe = pb2_grpc.TranslatorStub(probe_channel)
    flooder = pb2_grpc.TranslatorStub(flood_channel)

    def timed(stub):
        start = time.monotonic()
        stub.Translate(pb2.TranslateRequest(contents=[probe_text]), timeout=600)
        return time.monotonic() - start

    results = {}
    try:
        for _ in range(3):
            timed(probe)  # warm-up
        results["idle"] = [timed(probe) for _ in range(args.probes)]
        for case, stub in (("own", probe), ("flooders", flooder)):
            calls = []
            for start in range(0, args.flood_sentences, 100):
                batch = [sentences[(start + i) % len(sentences)] for i in range(100)]
                calls.append(flooder.Translate.future(pb2.TranslateRequest(contents=batch),
                                                      timeout=3600))
            time.sleep(0.5)  # the flood is queued
            # On the flooder's connection one probe is enough: it waits for the whole flood,
            # after which the server is idle again.
            results[case] = [timed(stub) for _ in range(args.probes if case == "own" else 1)]
            for call in calls:
                call.result()
        before = status_bytes(server.pid)
        flood = pb2.TranslateRequest(contents=[""] * 2_000_000)
        for _ in range(3):
            try:
                probe.Translate(flood, timeout=120)
            except grpc.RpcError as error:
                assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
        after = status_bytes(server.pid)
    finally:
        probe_channel.close()
        flood_channel.close()
        server.terminate()
        server.wait(60)

    idle = statistics.median(results["idle"])
    report = {"model_dir": args.model_dir, "flood_sentences": args.flood_sentences,
              "empty_entry_flood_rss_mb": {"before": before / 2**20, "after": after / 2**20}}
    for case, latencies in results.items():
        report[case] = {"median_s": statistics.median(latencies), "max_s": max(latencies),
                        "median_over_idle": statistics.median(latencies) / idle}
        print(f"{case:>9}: median {report[case]['median_s']:.3f} s, max {max(latencies):.3f} s, "
              f"{report[case]['median_over_idle']:.1f}x idle")
    print(f"empty-entry flood: resident memory {before / 2**20:.0f} MB before, "
          f"{after / 2**20:.0f} MB after")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
