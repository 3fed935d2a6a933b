"""A real Prometheus server scrapes xlate-server's /metrics: the target is up and
xlate_requests_total counts the calls made.

Run by CTest; prints 'N passed, N failed' and exits non-zero on failure.
"""
import sys
import unittest

from harness import Prometheus, Server, pb2, wait_until


class PrometheusScrape(unittest.TestCase):
    def setUp(self):
        self.server = Server()
        self.prometheus = Prometheus(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            "scrape_configs:\n  - job_name: xlate\n    static_configs:\n"
            f"      - targets: ['127.0.0.1:{self.server.metrics_port}']\n")

    def tearDown(self):
        self.prometheus.close()
        self.server.close()

    def ok_requests(self):
        data = self.prometheus.api("query", query='sum(xlate_requests_total{code="OK"})')
        return float(data["result"][0]["value"][1]) if data and data["result"] else None

    def test_prometheus_scrapes_request_counts(self):
        self.assertTrue(wait_until(self.prometheus.target_up, 60),
                        "Prometheus never saw the target up")
        calls = 5
        for i in range(calls):
            self.server.stub.Translate(pb2.TranslateRequest(contents=[f"a dog number {i}"]),
                                       timeout=60)
        self.assertTrue(wait_until(lambda: self.ok_requests() == calls, 60),
                        f"Prometheus reports {self.ok_requests()} OK requests, expected {calls}")
        data = self.prometheus.api("query", query="xlate_model_info")
        self.assertEqual(data["result"][0]["metric"]["device"], self.server.device)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed, skipped = len(result.failures) + len(result.errors), len(result.skipped)
    # "0 passed, 0 failed, N skipped" is what CTest reads as a skip (SKIP_REGULAR_EXPRESSION).
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed or not result.wasSuccessful() else 0)
