#!/usr/bin/env python3
"""What the HTTP/JSON face and API keys cost: the same closed-loop load on one xlate-server
through gRPC (Translate), through HTTP (/v1/translate, JSON over keep-alive connections), and
through gRPC with --api_keys_file and a key on every call. Each run keeps --clients calls in
flight for --seconds, one sentence of --input per call in turn, and reports requests/s, latency
p50/p99 and the server process's CPU seconds per request (utime + stime from /proc), the figure
that says what the JSON path and the key check add to the server's own work.

usage: rest_vs_grpc.py --server build/server/xlate-server --model_dir DIR --input FILE
                       [--clients 8] [--seconds 20] [--json_out FILE]
"""
import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "server"))
os.environ.setdefault("XLATE_REPO", os.path.join(os.path.dirname(__file__), ".."))
for variable in ("XLATE_SERVER_BIN", "XLATE_BIN", "XLATE_TINY_MODEL", "XLATE_SAMPLE_TEXT"):
    os.environ.setdefault(variable, "")
from harness import free_port, pb2, pb2_grpc  # noqa: E402

KEY = "bench-key-0123456789abcdef"


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server(args, *flags):
    process = subprocess.Popen([args.server, f"--model_dir={args.model_dir}", "--host=127.0.0.1",
                                "--port=0", "--metrics_port=0", *flags],
                               stderr=subprocess.PIPE, text=True)
    ports = {}
    for line in process.stderr:
        http = re.search(r"HTTP on 127\.0\.0\.1:(\d+)", line)
        if http:
            ports["http"] = int(http[1])
        grpc_port = re.search(r"on 127\.0\.0\.1:(\d+), metrics", line)
        if grpc_port:
            ports["grpc"] = int(grpc_port[1])
            break
    threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()
    return process, ports


def run_load(call, sentences, clients, seconds):
    """Closed loop: `clients` threads each calling call(sentence) until the time is up."""
    latencies, failures = [], []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def worker(offset):
        index = offset
        session = {}
        while time.monotonic() < stop:
            sentence = sentences[index % len(sentences)]
            index += clients
            start = time.monotonic()
            try:
                call(sentence, session)
                with lock:
                    latencies.append(time.monotonic() - start)
            except Exception as error:  # counted, not hidden
                with lock:
                    failures.append(repr(error)[:200])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, failures


def percentile(values, fraction):
    values = sorted(values)
    return values[min(len(values) - 1, int(fraction * len(values)))] if values else 0.0


def measure(name, args, sentences, flags, make_call):
    process, ports = start_server(args, *flags)
    try:
        call = make_call(ports)
        for sentence in sentences[:args.clients]:  # warm-up, uncounted
            call(sentence, {})
        cpu_before, wall_before = cpu_seconds(process.pid), time.monotonic()
        latencies, failures = run_load(call, sentences, args.clients, args.seconds)
        wall = time.monotonic() - wall_before
        cpu = cpu_seconds(process.pid) - cpu_before
    finally:
        process.terminate()
        process.wait(60)
    requests = len(latencies)
    result = {"name": name, "requests": requests, "failures": len(failures),
              "requests_per_second": requests / wall,
              "latency_p50_s": percentile(latencies, 0.5),
              "latency_p99_s": percentile(latencies, 0.99),
              "server_cpu_ms_per_request": 1000 * cpu / max(requests, 1)}
    if failures:
        result["first_failure"] = failures[0]
    print(json.dumps(result), flush=True)
    return result


def grpc_call(ports, metadata=()):
    stub = pb2_grpc.TranslatorStub(grpc.insecure_channel(f"127.0.0.1:{ports['grpc']}"))

    def call(sentence, _session):
        stub.Translate(pb2.TranslateRequest(contents=[sentence]), metadata=metadata, timeout=120)
    return call


def http_call(ports):
    def call(sentence, session):
        if "connection" not in session:  # one keep-alive connection per client thread
            session["connection"] = http.client.HTTPConnection("127.0.0.1", ports["http"],
                                                               timeout=120)
        connection = session["connection"]
        connection.request("POST", "/v1/translate", json.dumps({"contents": [sentence]}),
                           {"Content-Type": "application/json"})
        response = connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {body[:200]!r}")
    return call


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--json_out")
    args = parser.parse_args()
    with open(args.input, encoding="utf-8") as f:
        sentences = [line.strip() for line in f if line.strip()][:500]
    keys_file = tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False)
    keys_file.write(KEY + "\n")
    keys_file.close()
    http_port = f"--http_port={free_port()}"
    results = [
        measure("grpc", args, sentences, [http_port], grpc_call),
        measure("http_json", args, sentences, [http_port], http_call),
        measure("grpc_with_api_key", args, sentences,
                [http_port, f"--api_keys_file={keys_file.name}"],
                lambda ports: grpc_call(ports, (("x-api-key", KEY),))),
    ]
    os.unlink(keys_file.name)
    base = results[0]
    summary = {"machine": os.uname().machine, "cores": os.cpu_count(), "clients": args.clients,
               "seconds": args.seconds, "model_dir": args.model_dir, "runs": results,
               "http_over_grpc_cpu_per_request":
                   results[1]["server_cpu_ms_per_request"] / base["server_cpu_ms_per_request"],
               "http_over_grpc_requests_per_second":
                   results[1]["requests_per_second"] / base["requests_per_second"],
               "keys_over_grpc_cpu_per_request":
                   results[2]["server_cpu_ms_per_request"] / base["server_cpu_ms_per_request"]}
    print(json.dumps(summary))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(summary, f, indent=1)
    return 1 if any(r["failures"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
