"""deploy/'s Prometheus configuration and Grafana dashboard against a real Prometheus scraping a
real server under traffic: the rules load, and every dashboard query, every recording rule and
the signal of every alert return data; every alert expression parses.

Run by CTest; prints 'N passed, N failed' and exits non-zero on failure.
"""
import json
import math
import os
import re
import sys
import threading
import unittest

import yaml

from harness import REPO, Prometheus, Server, pb2, sample_sentences, wait_until

DEPLOY = os.path.join(REPO, "deploy")
# An alert is `signal comparison threshold` (deploy/prometheus/rules.yml says so).
ALERT = re.compile(r"^(?P<signal>.+?)\s*(?:>|<|>=|<=|==|!=)\s*[-+0-9.e]+\s*$", re.S)


def dashboard_queries():
    with open(os.path.join(DEPLOY, "grafana", "dashboards", "xlate.json")) as f:
        dashboard = json.load(f)
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            # Grafana's own variable: a rate window of at least 4 scrape intervals.
            yield panel["title"], target["expr"].replace("$__rate_interval", "1m")


class DeployedMonitoring(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server("--translation_cache_mib=8")  # the cache panels need data
        with open(os.path.join(DEPLOY, "prometheus", "prometheus.yml")) as f:
            config = yaml.safe_load(f)
        # The deployed configuration, pointed at the test server and sped up for a test.
        config["global"].update(scrape_interval="1s", evaluation_interval="1s")
        for job in config["scrape_configs"]:
            job["static_configs"] = [{"targets": [f"127.0.0.1:{cls.server.metrics_port}"]}]
        with open(os.path.join(DEPLOY, "prometheus", "rules.yml")) as f:
            cls.rules_text = f.read()
        cls.prometheus = Prometheus(yaml.safe_dump(config), {"rules.yml": cls.rules_text})
        cls.rules = yaml.safe_load(cls.rules_text)
        # Traffic all along: good calls and a bad one, so that rates and quantiles have data.
        cls.stop = threading.Event()
        sentences = sample_sentences(8)

        def traffic():
            rounds = 0
            while not cls.stop.is_set():
                # The same sentences again (the translation cache answers them) and one with
                # options not sent before (decoded: queue waits and batches).
                for sentence in sentences:
                    cls.server.stub.Translate(pb2.TranslateRequest(contents=[sentence]),
                                              timeout=60)
                options = pb2.DecodingOptions(length_penalty=0.5 + (rounds % 997) * 0.001)
                cls.server.stub.Translate(pb2.TranslateRequest(
                    contents=[sentences[rounds % len(sentences)]], options=options), timeout=60)
                rounds += 1
                try:
                    cls.server.stub.Translate(pb2.TranslateRequest(contents=[]), timeout=60)
                except Exception:  # INVALID_ARGUMENT, as meant
                    pass

        cls.traffic = threading.Thread(target=traffic)
        cls.traffic.start()
        ready = wait_until(cls.prometheus.target_up, 60) and wait_until(
            lambda: cls.has_data("xlate:request_duration_seconds:p99_5m"), 60)
        if not ready:
            cls.tearDownClass()
            raise RuntimeError("Prometheus never scraped the server and evaluated the rules")

    @classmethod
    def tearDownClass(cls):
        cls.stop.set()
        cls.traffic.join(60)
        cls.prometheus.close()
        cls.server.close()

    @classmethod
    def has_data(cls, expr):
        status, result = cls.prometheus.query(expr)
        return status == "success" and any(not math.isnan(float(r["value"][1])) for r in result)

    def assert_data(self, name, expr):
        status, result = self.prometheus.query(expr)
        self.assertEqual(status, "success", f"{name}: {expr}")
        self.assertTrue(result, f"{name}: no series for {expr}")
        values = [float(r["value"][1]) for r in result]
        self.assertFalse(all(math.isnan(v) for v in values), f"{name}: only NaN for {expr}")

    def test_every_dashboard_query_returns_data(self):
        queries = list(dashboard_queries())
        self.assertGreaterEqual(len(queries), 8)
        for title, expr in queries:
            with self.subTest(panel=title, expr=expr):
                self.assert_data(title, expr)

    def test_rules_load_and_every_signal_returns_data(self):
        groups = self.prometheus.api("rules")["groups"]
        loaded = {rule["name"]: rule for group in groups for rule in group["rules"]}
        for group in self.rules["groups"]:
            for rule in group["rules"]:
                name = rule.get("record") or rule["alert"]
                with self.subTest(rule=name):
                    self.assertIn(name, loaded)
                    self.assertEqual(loaded[name]["health"], "ok", loaded[name].get("lastError"))
                    if "record" in rule:
                        self.assert_data(name, rule["record"])
                        continue
                    status, _ = self.prometheus.query(rule["expr"])
                    self.assertEqual(status, "success", f"{name}: {rule['expr']}")
                    match = ALERT.match(rule["expr"].strip())
                    self.assertIsNotNone(match, f"{name} is not `signal op threshold`")
                    self.assert_data(name, match["signal"])
                    # A healthy server under light traffic raises none of them.
                    self.assertEqual(loaded[name]["state"], "inactive", name)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed, skipped = len(result.failures) + len(result.errors), len(result.skipped)
    # "0 passed, 0 failed, N skipped" is what CTest reads as a skip (SKIP_REGULAR_EXPRESSION).
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed or not result.wasSuccessful() else 0)
