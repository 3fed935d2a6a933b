"""A real Prometheus server scrapes xlate-server's /metrics: the target is up and
xlate_requests_total counts the calls made.

Run by CTest; prints 'N passed, N failed' and exits non-zero on failure.
"""
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest
import urllib.parse
import urllib.request

from harness import Server, pb2, wait_until


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrometheusScrape(unittest.TestCase):
    def setUp(self):
        self.server = Server()
        self.workdir = tempfile.mkdtemp(prefix="xlate_prometheus_")
        self.web_port = free_port()
        config = f"{self.workdir}/prometheus.yml"
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: xlate\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{self.server.metrics_port}']\n")
        self.prometheus = subprocess.Popen(
            [shutil.which("prometheus") or "/usr/bin/prometheus", f"--config.file={config}",
             f"--storage.tsdb.path={self.workdir}/data",
             f"--web.listen-address=127.0.0.1:{self.web_port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def tearDown(self):
        self.prometheus.terminate()
        self.prometheus.wait(30)
        self.server.close()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def api(self, path, **params):
        url = f"http://127.0.0.1:{self.web_port}/api/v1/{path}?" + urllib.parse.urlencode(params)
        try:
            return json.load(urllib.request.urlopen(url, timeout=5))["data"]
        except OSError:
            return None

    def target_up(self):
        data = self.api("targets")
        return bool(data) and any(t["health"] == "up" for t in data["activeTargets"])

    def ok_requests(self):
        data = self.api("query", query='sum(xlate_requests_total{code="OK"})')
        return float(data["result"][0]["value"][1]) if data and data["result"] else None

    def test_prometheus_scrapes_request_counts(self):
        self.assertTrue(wait_until(self.target_up, 60), "Prometheus never saw the target up")
        calls = 5
        for i in range(calls):
            self.server.stub.Translate(pb2.TranslateRequest(contents=[f"a dog number {i}"]),
                                       timeout=60)
        self.assertTrue(wait_until(lambda: self.ok_requests() == calls, 60),
                        f"Prometheus reports {self.ok_requests()} OK requests, expected {calls}")
        data = self.api("query", query="xlate_model_info")
        self.assertEqual(data["result"][0]["metric"]["device"], "cpu")


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    print(f"{result.testsRun - failed} passed, {failed} failed")
    sys.exit(1 if failed or not result.wasSuccessful() else 0)
