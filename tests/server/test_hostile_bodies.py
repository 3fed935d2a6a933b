"""The QA round's requests that killed the server or exhausted its memory (issue 70 items 1-3),
at the default limits: each is refused by name, the server's peak memory stays where it was,
and it goes on translating."""
import json
import sys
import unittest
import urllib.error
import urllib.request

import grpc

from harness import Server, free_port, pb2

DEEP_HTML = "<b>" * 20000 + "The dog runs."  # 60 KB: SIGSEGV in the markup walk before


def post(port, path, data, content_type="application/json"):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data,
                                     headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


class HostileBodies(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(f"--http_port={free_port()}")
        cls.port = cls.server.http_port

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def peak_mib(self):
        with open(f"/proc/{self.server.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        raise AssertionError("no VmHWM")

    def assert_still_translates(self):
        reply = self.server.stub.Translate(pb2.TranslateRequest(contents=["A dog runs."]),
                                           timeout=120)
        self.assertTrue(reply.translations[0].translated_text)

    def test_deeply_nested_html_is_refused_by_name_on_every_route(self):
        status, body = post(self.port, "/v1/translate",
                            json.dumps({"contents": [DEEP_HTML],
                                        "mimeType": "text/html"}).encode())
        self.assertEqual(status, 400, body)
        self.assertIn("contents[0]: HTML elements nested more than 256 deep", body["message"])
        with self.assertRaises(grpc.RpcError) as refused:
            self.server.stub.Translate(
                pb2.TranslateRequest(contents=[DEEP_HTML], mime_type="text/html"), timeout=120)
        self.assertEqual(refused.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("nested more than 256 deep", refused.exception.details())
        status, body = post(self.port, "/translate",
                            json.dumps({"q": DEEP_HTML, "source": "en", "target": "de",
                                        "format": "html"}).encode())
        self.assertEqual(status, 400, body)
        self.assertIn("nested more than 256 deep", body["error"])
        # Formatting elements reopened in each later paragraph: 53 KB that made a 2.9 GB tree.
        reopened = ("<p>" + "".join(f"<b id={i}>" for i in range(2000)) + "</p><p>x" * 4000)
        before = self.peak_mib()
        status, body = post(self.port, "/v1/translate",
                            json.dumps({"contents": [reopened],
                                        "mimeType": "text/html"}).encode())
        self.assertEqual(status, 400, body)
        self.assertIn("parse tree would take over", body["message"])
        self.assertLess(self.peak_mib() - before, 64)
        self.assert_still_translates()

    def test_libretranslate_bodies_are_bounded_while_read(self):
        # 4.17 MB, under the 4 MiB limit: 1.39M empty strings, then as many empty arrays.
        before = self.peak_mib()
        for item in ('""', "[]"):
            data = ('{"q": [' + ",".join([item] * 1_390_000) + '], "source": "en", '
                    '"target": "de"}').encode()
            self.assertLess(len(data), 4 << 20)
            status, body = post(self.port, "/translate", data)
            self.assertEqual(status, 400, body)
            self.assertIn("q holds more than 256 texts" if item == '""'
                          else "q must be a string or strings", body["error"])
        # Deep arrays took a core for seconds (8,000) to minutes (100,000).
        for depth in (8000, 100000):
            for path in ("/translate", "/detect"):
                data = ('{"q": ' + "[" * depth + "]" * depth + "}").encode()
                status, body = post(self.port, path, data)
                self.assertEqual(status, 400, body)
                self.assertIn("q must be a string or strings", body["error"])
        self.assertLess(self.peak_mib() - before, 64)
        self.assert_still_translates()


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
