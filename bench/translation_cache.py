#!/usr/bin/env python3
"""The translation cache as a site's pages meet it: the same pages through a server with a
cache (--translation_cache_mib=64) and one without (0, the default), same machine, same run.

    python3 bench/translation_cache.py [--model_dir models/en-de-general] [--pages 12]
        [--repeats 3] [--concurrency 1] [--json_out FILE]

A page is --unique newstest2014 sentences of its own and --boilerplate sentences every page
shares (navigation, footers), one entry each, sent as one Translate call; a site is --pages
pages, one after the other or --concurrency at a time. With the defaults 30% of each
page's sentences repeat, and the first page repeats nothing. Each repeat takes a site of fresh
sentences (nothing the cache kept from the last) and runs it through both servers in turn,
the order alternating; the servers get --threads. Prints the seconds per site of each and
their ratio (median of the pairs), and checks that both servers returned the same bytes.
"""
import argparse
import concurrent.futures
import json
import os
import statistics
import sys
import time
import types

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_vs_offline import REPO, start_server  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "server", "examples"))
from translate_client import import_stubs  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model_dir", default=os.path.join(REPO, "models", "en-de-general"))
    parser.add_argument("--source", default=os.path.join(REPO, "..", "shared", "data", "wmt14",
                                                         "newstest2014.en"))
    parser.add_argument("--pages", type=int, default=12)
    parser.add_argument("--unique", type=int, default=14)
    parser.add_argument("--boilerplate", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=1,
                        help="pages in flight at once (1: one after the other, as a browser "
                             "extension sends them; more: as a crawler or a document job)")
    parser.add_argument("--server", default=os.path.join(REPO, "build", "server", "xlate-server"))
    parser.add_argument("--json_out")
    args = parser.parse_args()
    pb2, pb2_grpc = import_stubs()
    with open(args.source, encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    per_site = args.boilerplate + args.pages * args.unique
    if per_site * args.repeats > len(lines):
        raise SystemExit(f"{args.source} has {len(lines)} sentences; the sites need "
                         f"{per_site * args.repeats}")

    def site(repeat):
        fresh = lines[repeat * per_site:(repeat + 1) * per_site]
        shared = fresh[:args.boilerplate]
        return [fresh[args.boilerplate + p * args.unique:args.boilerplate + (p + 1) * args.unique]
                + shared for p in range(args.pages)]

    server_args = types.SimpleNamespace(server=args.server, model_dir=args.model_dir,
                                        threads=args.threads, max_queue_delay_ms=5)
    servers = {}
    try:
        for name, flags in (("cache", ["--translation_cache_mib=64"]),
                            ("no cache", ["--translation_cache_mib=0"])):
            process, port = start_server(server_args, *flags)
            channel = grpc.insecure_channel(f"127.0.0.1:{port}")
            servers[name] = (process, channel, pb2_grpc.TranslatorStub(channel))
        # Warm both (first calls create oneDNN primitives) on sentences no site uses.
        for _, _, stub in servers.values():
            stub.Translate(pb2.TranslateRequest(contents=lines[-8:]), timeout=600)
        seconds = {name: [] for name in servers}
        for repeat in range(args.repeats):
            pages = site(repeat)
            order = list(servers) if repeat % 2 == 0 else list(reversed(servers))
            replies = {}
            for name in order:
                stub = servers[name][2]
                start = time.monotonic()
                with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
                    replies[name] = list(pool.map(
                        lambda page, stub=stub: stub.Translate(pb2.TranslateRequest(
                            contents=page), timeout=600).SerializeToString(), pages))
                seconds[name].append(time.monotonic() - start)
                print(f"site {repeat + 1}: {name:9s} {seconds[name][-1]:7.2f} s", flush=True)
            if replies["cache"] != replies["no cache"]:
                raise SystemExit("the servers with and without the cache answered differently")
    finally:
        for process, channel, _ in servers.values():
            channel.close()
            process.terminate()
            process.wait(60)
    ratios = [b / a for a, b in zip(seconds["cache"], seconds["no cache"])]
    repeated = args.boilerplate * (args.pages - 1) / (args.pages * (args.unique + args.boilerplate))
    summary = {"model_dir": args.model_dir, "pages": args.pages,
               "sentences_per_page": args.unique + args.boilerplate,
               "repeated_share": round(repeated, 3), "threads": args.threads,
               "concurrency": args.concurrency,
               "seconds_with_cache": [round(s, 2) for s in seconds["cache"]],
               "seconds_without": [round(s, 2) for s in seconds["no cache"]],
               "speedup_median": round(statistics.median(ratios), 3)}
    print(json.dumps(summary))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
