#!/usr/bin/env python3
"""How many idle and slow HTTP connections it takes before a well-behaved client waits: the QA
round's item 4 (64 slow connections, or 500 idle keep-alive ones, made every HTTP request wait
30 s on the thread-per-connection gateway).

One xlate-server at default flags (but --http_port). At each level this opens N connections
that do nothing (idle: connected, nothing sent) or M that trickle a request a byte per second
each (slow: a request line, then header bytes, never finished), then a well-behaved client makes
--requests calls of /v1/translate (one test sentence, a new connection each) and /v1/models, and
the client's latency is reported (median and worst), with the server's RSS and the connections
still open. Levels run until one fails (a refused connection or a wait over 1 s), or all pass.

usage: http_connections.py --server build/server/xlate-server --model_dir models/en-de-general
                           [--idle 1000,5000,10000,15000] [--slow 250,1000,2000,4000]
                           [--requests 20] [--json_out FILE]
"""
import argparse
import http.client
import json
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import threading
import time

SENTENCE = "The committee will meet again next week to discuss the budget."


def start_server(args):
    process = subprocess.Popen([args.server, f"--model_dir={args.model_dir}", "--host=127.0.0.1",
                                "--port=0", "--metrics_port=0", f"--http_port={args.http_port}"],
                               stderr=subprocess.PIPE, text=True)
    for line in process.stderr:
        if re.search(r"serving model .* on 127\.0\.0\.1:\d+", line):
            break
    threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()
    return process


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read())[1]) / 1024


def one_call(port, method, path, body):
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request(method, path, body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        status = response.status
    except OSError as error:
        status = f"error: {error}"
    finally:
        connection.close()
    return status, time.monotonic() - started


def well_behaved(port, requests):
    """Latencies (s) of `requests` translations and model listings, each on a new connection."""
    body = json.dumps({"contents": [SENTENCE]})
    results = {"translate": [], "models": []}
    failures = []
    for _ in range(requests):
        for name, method, path, data in (("translate", "POST", "/v1/translate", body),
                                         ("models", "GET", "/v1/models", None)):
            status, seconds = one_call(port, method, path, data)
            if status != 200:
                failures.append(f"{path}: {status}")
            results[name].append(seconds)
    summary = {name: {"median_ms": round(statistics.median(v) * 1000, 1),
                      "max_ms": round(max(v) * 1000, 1)} for name, v in results.items()}
    summary["failures"] = failures[:5]
    summary["failed"] = len(failures)
    return summary


class Trickler:
    """`count` connections each sending a never-ending request a byte per second."""

    def __init__(self, port, count):
        self.sockets = [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]
        self.request = (b"POST /v1/translate HTTP/1.1\r\nHost: bench\r\n"
                        + b"X-Pad: aaaaaaaaaaaaaaaaaaaa\r\n" * 1000)
        self.stop = threading.Event()
        self.cut_off = 0
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def run(self):
        position = 0
        while not self.stop.is_set():
            byte = self.request[position:position + 1]
            position = (position + 1) % len(self.request)
            for i, sock in enumerate(self.sockets):
                if sock is None:
                    continue
                try:
                    sock.send(byte, socket.MSG_DONTWAIT)
                except OSError:
                    self.sockets[i] = None
                    self.cut_off += 1
            self.stop.wait(1.0)

    def close(self):
        self.stop.set()
        self.thread.join()
        for sock in self.sockets:
            if sock is not None:
                sock.close()


def open_idle(port, count):
    held, refused = [], 0
    for _ in range(count):
        try:
            held.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        except OSError:
            refused += 1
    return held, refused


def still_open(sockets):
    """How many of `sockets` the server has not closed."""
    open_count = 0
    for sock in sockets:
        sock.setblocking(False)
        try:
            if sock.recv(1, socket.MSG_PEEK):
                open_count += 1
        except BlockingIOError:
            open_count += 1
        except OSError:
            pass
    return open_count


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--idle", default="1000,5000,10000,15000")
    parser.add_argument("--slow", default="250,1000,2000,4000")
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--json_out")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        args.http_port = probe.getsockname()[1]
    server = start_server(args)
    results = {"source": {
        "doc": "docs/benchmarks.md#idle-and-slow-http-connections",
        "machine": "2-core development VM, AMD EPYC, no GPU (client and server share the 2 "
                   "cores); open-file limit %d" % hard,
        "date": time.strftime("%Y-%m-%d"),
        "command": "python3 bench/http_connections.py --server build/server/xlate-server "
                   f"--model_dir {args.model_dir} --idle {args.idle} --slow {args.slow} "
                   f"--requests {args.requests} --json_out FILE"},
        "sentence": SENTENCE, "levels": []}
    try:
        time.sleep(1)
        well_behaved(args.http_port, 3)  # warm-up
        level = {"idle": 0, "slow": 0, "client": well_behaved(args.http_port, args.requests),
                 "server_rss_mib": round(rss_mib(server.pid), 1)}
        results["levels"].append(level)
        print(json.dumps(level), flush=True)
        for kind, counts in (("idle", args.idle), ("slow", args.slow)):
            for count in [int(c) for c in counts.split(",") if c]:
                if kind == "idle":
                    held, refused = open_idle(args.http_port, count)
                    trickler = None
                else:
                    trickler = Trickler(args.http_port, count)
                    held, refused = trickler.sockets, 0
                time.sleep(3)  # a few bytes trickled by each
                client = well_behaved(args.http_port, args.requests)
                level = {"idle": count if kind == "idle" else 0,
                         "slow": count if kind == "slow" else 0,
                         "refused_connections": refused,
                         "still_open": still_open([s for s in held if s is not None]),
                         "client": client, "server_rss_mib": round(rss_mib(server.pid), 1)}
                results["levels"].append(level)
                print(json.dumps(level), flush=True)
                if trickler:
                    trickler.close()
                else:
                    for sock in held:
                        sock.close()
                time.sleep(2)
                worst = max(client["translate"]["max_ms"], client["models"]["max_ms"])
                if client["failed"] or refused or worst > 1000:
                    break
    finally:
        server.terminate()
        server.wait(60)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
