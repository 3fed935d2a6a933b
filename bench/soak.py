#!/usr/bin/env python3
"""Soak: xlate-server under saturating load for a long time, the way strangers load it.

    python3 bench/soak.py [--model_dir models/en-de-multi30k] [--duration_s 600] [--clients 16]

--clients threads keep calls in flight (closed loop) with a mix: 1 to 8 texts of Multi30k
test_2016 sentences (a third of them paragraphs of 2-4 sentences), beams 1 to 5 with n-best
lists, scores, length limits and alignments (of several layers and heads) mixed in, a fifth of
the calls streamed; 10% of the calls carry a deadline too short to meet (DEADLINE_EXCEEDED by
design) and 10% are cancelled by their client after 0-100 ms. Prints, every --report_every_s, the sentences/s and the server's
resident memory; at the end the calls by status code, the resident memory idle (before the load),
its peak, the RSS growth from the end of the warm-up (the first fifth) to the end, and the
KV cache's pool and the translation cache from /metrics (bytes, blocks, hits, misses,
evictions). Exits non-zero when a call ends with a code other than
OK, DEADLINE_EXCEEDED, CANCELLED (the client's own) or RESOURCE_EXHAUSTED, when the server
stops serving, or when the RSS grows by more than --max_rss_growth.

--hostile_clients threads send, beside them, what the QA round found could kill or bloat the
server: HTML nested 20,000 deep (60 KB), formatting elements that HTML reopens in thousands of
paragraphs (53 KB that made a 2.9 GB tree), and 25,000 start tags. Each must be refused
INVALID_ARGUMENT, and the normal clients must see no code other than by design.

--idle_sockets N and --slow_sockets M (with --http_clients K, default 2) serve HTTP too and hold
N connections that send nothing and M that trickle a request a byte a second, each replaced as
soon as the server cuts it off (idle after --http_idle_seconds, trickling after
--http_request_seconds), while K clients call /v1/translate over HTTP; each of their calls must
end 200, or 429/504 (RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED) by design.
"""
import argparse
import collections
import json
import os
import random
import re
import signal
import socket
import sys
import threading
import time
import urllib.request

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_vs_offline import (REPO, add_multi30k_server_arguments, source_sentences,  # noqa: E402
                               start_multi30k_server)

sys.path.insert(0, os.path.join(REPO, "server", "examples"))
from translate_client import import_stubs  # noqa: E402



def status_bytes(pid, field="VmRSS"):
    """A memory field of /proc/PID/status in bytes: VmRSS (resident now) or VmHWM (its peak)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def cache_metrics(metrics_port, cache):
    """A cache's gauges and counters from the server's /metrics (cache "kv_cache": the KV
    cache's pool, xlate_kv_cache_*; "translation_cache": xlate_translation_cache_*), bytes in
    MiB."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read()
    values = {}
    for line in text.decode().splitlines():
        match = re.match(rf"xlate_{cache}_(\w+)\{{[^}}]*\}} (\S+)", line)
        if match:
            value = float(match[2])
            values[match[1]] = round(value / 2**20, 1) if match[1].endswith("bytes") else int(value)
    return values


BY_DESIGN = {"OK", "DEADLINE_EXCEEDED", "CANCELLED", "RESOURCE_EXHAUSTED"}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_multi30k_server_arguments(parser, duration_s=600)
    parser.add_argument("--report_every_s", type=float, default=10)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--max_rss_growth", type=float, default=0.05)
    parser.add_argument("--hostile_clients", type=int, default=0)
    parser.add_argument("--idle_sockets", type=int, default=0)
    parser.add_argument("--slow_sockets", type=int, default=0)
    parser.add_argument("--http_clients", type=int, default=2)
    parser.add_argument("--server_flag", action="append", default=[],
                        help="a flag for xlate-server (repeatable), e.g. --server_flag="
                             "--translation_cache_mib=1")
    parser.add_argument("--json_out")
    args = parser.parse_args()
    pb2, pb2_grpc = import_stubs()
    sentences = source_sentences(args.source)

    hostile_sockets = args.idle_sockets + args.slow_sockets > 0
    if hostile_sockets:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            http_port = probe.getsockname()[1]
        args.server_flag.append(f"--http_port={http_port}")
    server, port = start_multi30k_server(args, *args.server_flag)
    metrics_port = next(int(m[1]) for line in server.startup_lines
                        for m in [re.search(r"metrics on port (\d+)", line)] if m)
    idle_rss = status_bytes(server.pid)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = pb2_grpc.TranslatorStub(channel)
    lock = threading.Lock()
    codes = collections.Counter()
    done_sentences = [0]
    stop = threading.Event()

    def client(seed):
        rng = random.Random(seed)
        while not stop.is_set():
            texts, count_in_request = [], 0
            for _ in range(rng.randint(1, 8)):
                count = rng.randint(2, 4) if rng.random() < 1 / 3 else 1
                texts.append(" ".join(rng.choice(sentences) for _ in range(count)))
                count_in_request += count
            beam = rng.choice([1, 2, 4, 4, 5])
            options = pb2.DecodingOptions(beam_size=beam, n_best=rng.randint(1, beam),
                                          return_scores=rng.random() < 0.3)
            if rng.random() < 0.2:
                options.max_extra_length = rng.randint(1, 20)
            request = pb2.TranslateRequest(contents=texts, options=options)
            if rng.random() < 0.3:  # alignments, of the last layer's average or another head
                request.alignment.CopyFrom(pb2.AlignmentOptions(**rng.choice(
                    [{}, {"layer": 0}, {"layer": -1, "head": 0}, {"head": 1}])))
            kind = rng.random()
            timeout = 0.005 if kind < 0.1 else 120
            streamed = rng.random() < 0.2
            call = (stub.TranslateStream(request, timeout=timeout) if streamed
                    else stub.Translate.future(request, timeout=timeout))
            if 0.1 <= kind < 0.2:
                time.sleep(rng.uniform(0, 0.1))
                call.cancel()
            try:
                if streamed:
                    for _ in call:
                        pass
                else:
                    call.result()
                code = "OK"
            except grpc.FutureCancelledError:
                code = "CANCELLED"
            except grpc.RpcError as error:
                code = error.code().name
            with lock:
                codes[code] += 1
                if code == "OK":
                    done_sentences[0] += count_in_request

    hostile_bodies = [
        "<b>" * 20000 + "The dog runs.",
        "<p>" + "".join(f"<b id={i}>" for i in range(2000)) + "</p><p>x" * 4000,
        "<i>a</i> " * 25000,
    ]
    hostile_codes = collections.Counter()

    def hostile_client(seed):
        rng = random.Random(seed)
        while not stop.is_set():
            request = pb2.TranslateRequest(contents=[rng.choice(hostile_bodies)],
                                           mime_type="text/html")
            try:
                stub.Translate(request, timeout=120)
                code = "OK"
            except grpc.RpcError as error:
                code = error.code().name
            with lock:
                hostile_codes[code] += 1

    http_codes = collections.Counter()
    sockets_cut_off = collections.Counter()

    def http_client(seed):
        rng = random.Random(seed)
        while not stop.is_set():
            body = json.dumps({"contents": [rng.choice(sentences)]}).encode()
            request = urllib.request.Request(f"http://127.0.0.1:{http_port}/v1/translate",
                                             data=body, method="POST",
                                             headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=120) as response:
                    response.read()
                    code = response.status
            except urllib.error.HTTPError as error:
                code = error.code
            except OSError as error:
                code = f"{type(error).__name__}"
            with lock:
                http_codes[code] += 1

    def hostile_connections():
        """Keeps --idle_sockets and --slow_sockets open, replacing those the server cuts off."""
        trickle = (b"POST /v1/translate HTTP/1.1\r\nHost: soak\r\n"
                   + b"X-Pad: aaaaaaaaaaaaaaaaaaaa\r\n" * 10000)

        def connect():
            sock = socket.create_connection(("127.0.0.1", http_port))
            sock.setblocking(False)
            return sock

        idle = [connect() for _ in range(args.idle_sockets)]
        slow = [[connect(), 0] for _ in range(args.slow_sockets)]
        while not stop.wait(1.0):
            for i, sock in enumerate(idle):
                try:
                    closed = sock.recv(1, socket.MSG_PEEK) == b""
                except BlockingIOError:
                    closed = False
                except OSError:
                    closed = True
                if closed:
                    sock.close()
                    idle[i] = connect()
                    sockets_cut_off["idle"] += 1
            for entry in slow:
                sock, sent = entry
                try:
                    sock.send(trickle[sent:sent + 1])
                    entry[1] = (sent + 1) % len(trickle)
                    try:
                        sock.recv(4096)  # the 408 or the end: cut off either way
                        cut = True
                    except BlockingIOError:
                        cut = False
                except OSError:
                    cut = True
                if cut:
                    sock.close()
                    entry[0], entry[1] = connect(), 0
                    sockets_cut_off["slow"] += 1
        for sock in idle + [entry[0] for entry in slow]:
            sock.close()

    threads = [threading.Thread(target=client, args=(seed,)) for seed in range(args.clients)]
    if hostile_sockets:
        threads.append(threading.Thread(target=hostile_connections))
        threads += [threading.Thread(target=http_client, args=(2000 + seed,))
                    for seed in range(args.http_clients)]
    threads += [threading.Thread(target=hostile_client, args=(1000 + seed,))
                for seed in range(args.hostile_clients)]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    timeline = []
    last_sentences, last_time = 0, start
    warm_rss = None
    try:
        while time.monotonic() - start < args.duration_s:
            time.sleep(args.report_every_s)
            now = time.monotonic()
            with lock:
                sentences_now = done_sentences[0]
            rss = status_bytes(server.pid)
            pool_mib = cache_metrics(metrics_port, "kv_cache").get("bytes", 0)
            rate = (sentences_now - last_sentences) / (now - last_time)
            timeline.append({"t_s": round(now - start, 1), "sentences_per_second": round(rate, 1),
                             "rss_mib": round(rss / 2**20, 1), "kv_cache_mib": pool_mib})
            print(f"{now - start:7.1f} s  {rate:7.1f} sentences/s  RSS {rss / 2**20:7.1f} MiB"
                  f"  KV cache {pool_mib:6.1f} MiB", flush=True)
            if warm_rss is None and now - start >= args.duration_s / 5:
                warm_rss = rss
            last_sentences, last_time = sentences_now, now
    finally:
        stop.set()
        for thread in threads:
            thread.join(300)
        final_rss = status_bytes(server.pid) if server.poll() is None else 0
        serving = server.poll() is None
        peak_rss = status_bytes(server.pid, "VmHWM") if serving else 0
        kv_cache = cache_metrics(metrics_port, "kv_cache") if serving else {}
        translations = cache_metrics(metrics_port, "translation_cache") if serving else {}
        server.send_signal(signal.SIGTERM)
        exit_code = server.wait(120)
        channel.close()

    growth = (final_rss - warm_rss) / warm_rss if warm_rss else 0.0
    unexpected = {code: n for code, n in codes.items() if code not in BY_DESIGN}
    summary = {"duration_s": args.duration_s, "clients": args.clients, "codes": dict(codes),
               "hostile_clients": args.hostile_clients, "hostile_codes": dict(hostile_codes),
               "idle_sockets": args.idle_sockets, "slow_sockets": args.slow_sockets,
               "sockets_cut_off": dict(sockets_cut_off),
               "http_codes": {str(code): n for code, n in http_codes.items()},
               "sentences": done_sentences[0], "rss_after_warmup_mib": round(warm_rss / 2**20, 1)
               if warm_rss else None, "rss_final_mib": round(final_rss / 2**20, 1),
               "rss_growth": round(growth, 4), "rss_idle_mib": round(idle_rss / 2**20, 1),
               "rss_peak_mib": round(peak_rss / 2**20, 1), "kv_cache": kv_cache,
               "translation_cache": translations,
               "server_exit_code": exit_code,
               "timeline": timeline}
    print(json.dumps({k: v for k, v in summary.items() if k != "timeline"}))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(summary, f, indent=2)
    problems = []
    if unexpected:
        problems.append(f"calls ended with codes not by design: {unexpected}")
    hostile_unexpected = {code: n for code, n in hostile_codes.items()
                          if code != "INVALID_ARGUMENT"}
    if hostile_unexpected:
        problems.append(f"hostile calls not refused as INVALID_ARGUMENT: {hostile_unexpected}")
    http_unexpected = {code: n for code, n in http_codes.items() if code not in (200, 429, 504)}
    if http_unexpected:
        problems.append(f"HTTP calls beside the idle and slow sockets failed: {http_unexpected}")
    if not serving or exit_code != 0:
        problems.append(f"the server stopped serving (exit {exit_code})")
    if growth > args.max_rss_growth:
        problems.append(f"RSS grew {growth:.1%} after warm-up (limit {args.max_rss_growth:.0%})")
    for problem in problems:
        print("FAIL:", problem, file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
