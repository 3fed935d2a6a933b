"""Starts a real xlate-server on 127.0.0.1 for the end-to-end tests and stops it.

Paths come from the environment (tests/CMakeLists.txt sets them):
  XLATE_SERVER_BIN  the xlate-server binary
  XLATE_BIN         the xlate command-line tool
  XLATE_TINY_MODEL  a model directory (the CTest fixture)
  XLATE_SAMPLE_TEXT real English sentences, one per line
  XLATE_REPO        the repository root (for proto/translator.proto, proto/model_admin.proto)
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import grpc

REPO = os.environ["XLATE_REPO"]
SERVER_BIN = os.environ["XLATE_SERVER_BIN"]
XLATE_BIN = os.environ["XLATE_BIN"]
MODEL_DIR = os.environ["XLATE_TINY_MODEL"]
SAMPLE_TEXT = os.environ["XLATE_SAMPLE_TEXT"]


def load_stubs():
    """Generates Python stubs for proto/translator.proto and proto/model_admin.proto with
    grpc_tools and imports them."""
    from grpc_tools import protoc
    out = tempfile.mkdtemp(prefix="xlate_stubs_")
    status = protoc.main(["protoc", f"-I{REPO}", f"--python_out={out}", f"--grpc_python_out={out}",
                          os.path.join(REPO, "proto", "translator.proto"),
                          os.path.join(REPO, "proto", "model_admin.proto")])
    if status != 0:
        raise RuntimeError("protoc failed on proto/translator.proto or proto/model_admin.proto")
    sys.path.insert(0, out)
    from proto import translator_pb2, translator_pb2_grpc  # noqa: E402
    from proto import model_admin_pb2, model_admin_pb2_grpc  # noqa: E402
    return translator_pb2, translator_pb2_grpc, model_admin_pb2, model_admin_pb2_grpc


pb2, pb2_grpc, admin_pb2, admin_pb2_grpc = load_stubs()


def sample_sentences(count):
    with open(SAMPLE_TEXT, encoding="utf-8") as f:
        return [line.rstrip("\n") for _, line in zip(range(count), f)]


SANITIZER_REPORT = re.compile(
    r"ERROR: (Address|Leak|Thread|Memory)Sanitizer|WARNING: ThreadSanitizer|runtime error: ")


class Server:
    """An xlate-server process on free ports of 127.0.0.1 (model_dir=None: the flags name the
    models). With --admin_address, admin_port is its port."""

    def __init__(self, *flags, model_dir=MODEL_DIR):
        self.stderr_lines = []
        model_flags = [f"--model_dir={model_dir}"] if model_dir else []
        self.process = subprocess.Popen(
            [SERVER_BIN, *model_flags, "--host=127.0.0.1", "--port=0",
             "--metrics_port=0", "--threads=1", *flags],
            stderr=subprocess.PIPE, text=True)
        ready = threading.Event()
        self.port = self.metrics_port = self.admin_port = self.http_port = None
        # Where --device put the models: "cuda" once the server logs the GPU it runs on
        # ("running on NVIDIA H100 ..., compute capability 9.0, ... in float16"), else "cpu".
        self.device = "cpu"

        def read_stderr():
            for line in self.process.stderr:
                self.stderr_lines.append(line)
                if re.search(r"running on (?!the CPU).*compute capability", line):
                    self.device = "cuda"
                http = re.search(r"HTTPS? on 127\.0\.0\.1:(\d+)", line)
                if http:
                    self.http_port = int(http[1])
                admin = re.search(r"ModelAdmin on 127\.0\.0\.1:(\d+)", line)
                if admin:
                    self.admin_port = int(admin[1])
                match = re.search(r"on 127\.0\.0\.1:(\d+), metrics on port (\d+)", line)
                if match:
                    self.port, self.metrics_port = int(match[1]), int(match[2])
                    ready.set()
            ready.set()

        self.reader = threading.Thread(target=read_stderr, daemon=True)
        self.reader.start()
        if not ready.wait(120) or self.port is None:
            self.kill()
            raise RuntimeError("xlate-server did not start:\n" + "".join(self.stderr_lines))
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}")
        self.stub = pb2_grpc.TranslatorStub(self.channel)

    def terminate(self, timeout=60):
        """SIGTERM, then the exit status."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def close(self):
        self.channel.close()
        if self.process.poll() is None:
            self.terminate()
        self.reader.join(5)
        # A sanitizer build (tests/sanitize/run_sanitized_units.sh) reports on stderr, leaks at
        # exit above all: any report fails the test that started this server.
        reports = [line for line in self.stderr_lines if SANITIZER_REPORT.search(line)]
        if reports:
            raise AssertionError("xlate-server: sanitizer report:\n" +
                                 "".join(self.stderr_lines[-80:]))


def offline_translations(sentences, *flags):
    """What `xlate translate` writes for the same sentences."""
    result = subprocess.run([XLATE_BIN, "translate", f"--model_dir={MODEL_DIR}", "--threads=1",
                             *flags], input="\n".join(sentences) + "\n", capture_output=True,
                            text=True, check=True)
    return result.stdout.splitlines()


def wait_until(predicate, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def make_certificate(directory, name):
    """A self-signed certificate for localhost and 127.0.0.1, and its key (openssl req)."""
    cert, key = os.path.join(directory, f"{name}.crt"), os.path.join(directory, f"{name}.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-keyout", key, "-out", cert,
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    """A real Prometheus server (Debian's) on a free port of 127.0.0.1, running `config` (the
    text of a prometheus.yml) from a fresh folder that also holds `files` {name: text}."""

    def __init__(self, config, files=None):
        self.workdir = tempfile.mkdtemp(prefix="xlate_prometheus_")
        self.port = free_port()
        for name, text in {"prometheus.yml": config, **(files or {})}.items():
            with open(os.path.join(self.workdir, name), "w") as f:
                f.write(text)
        self.process = subprocess.Popen(
            [shutil.which("prometheus") or "/usr/bin/prometheus",
             f"--config.file={self.workdir}/prometheus.yml",
             f"--storage.tsdb.path={self.workdir}/data",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def api(self, path, **params):
        """The `data` of an HTTP API answer; None when Prometheus does not answer (yet)."""
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}?" + urllib.parse.urlencode(params)
        try:
            return json.load(urllib.request.urlopen(url, timeout=5))["data"]
        except OSError:
            return None

    def query(self, expr):
        """(status, result) of an instant query: status is "success" or the error's text."""
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode(
            {"query": expr})
        try:
            answer = json.load(urllib.request.urlopen(url, timeout=5))
        except urllib.error.HTTPError as error:  # 400: the expression does not parse
            answer = json.load(error)
        if answer["status"] != "success":
            return answer.get("error", "error"), []
        return "success", answer["data"]["result"]

    def target_up(self):
        data = self.api("targets")
        return bool(data) and any(t["health"] == "up" for t in data["activeTargets"])

    def close(self):
        self.process.terminate()
        self.process.wait(30)
        shutil.rmtree(self.workdir, ignore_errors=True)
