"""--api_keys_file on a real server: gRPC calls (Translate, TranslateStream, DetectLanguage, the
admin's ReloadModel) and HTTP ones (v1 and LibreTranslate's, through its PyPI client) need a
listed key, a key over its requests per minute is refused with when to retry while other keys go
on, ListModels and health stay open, SIGHUP reloads the keys, and no key ever reaches the log.

Run by CTest; prints 'N passed, N failed' and exits non-zero on failure.
"""
import json
import os
import signal
import sys
import tempfile
import unittest
import urllib.error
import urllib.request

import grpc
from libretranslatepy import LibreTranslateAPI

from harness import Server, admin_pb2, admin_pb2_grpc, free_port, pb2, wait_until

ALICE = "alice-key-0123456789abcdef"
BOB = "bob-key-0123456789abcdef00"    # 2 requests per minute
CAROL = "carol-key-0123456789abcdef"  # added by the reload


def http(port, path, body, headers=None):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data,
                                     headers={"Content-Type": "application/json",
                                              **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


class ApiKeys(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="xlate_keys_")
        cls.keys_file = os.path.join(cls.folder, "keys.tsv")
        with open(cls.keys_file, "w") as f:
            f.write(f"# test keys\n{ALICE}\n{BOB}\t2\n")
        cls.server = Server(f"--api_keys_file={cls.keys_file}", f"--http_port={free_port()}",
                            f"--admin_address=127.0.0.1:{free_port()}")
        cls.request = pb2.TranslateRequest(contents=["A dog runs in the park."])

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        log = "".join(cls.server.stderr_lines)
        for key in (ALICE, BOB, CAROL):
            assert key not in log, "a key reached the server's log"

    def translate(self, metadata):
        return self.server.stub.Translate(self.request, metadata=metadata, timeout=60)

    def refused(self, call, code, text=""):
        with self.assertRaises(grpc.RpcError) as raised:
            call()
        self.assertEqual(raised.exception.code(), code, raised.exception.details())
        self.assertIn(text, raised.exception.details())
        return raised.exception.details()

    def test_1_grpc_calls_need_a_listed_key(self):
        self.refused(lambda: self.translate(()), grpc.StatusCode.UNAUTHENTICATED,
                     "authorization: Bearer")
        self.refused(lambda: self.translate((("x-api-key", ALICE + "x"),)),
                     grpc.StatusCode.UNAUTHENTICATED, "not valid")
        bearer = self.translate((("authorization", f"Bearer {ALICE}"),))
        header = self.translate((("x-api-key", ALICE),))
        self.assertEqual(bearer.translations[0].translated_text,
                         header.translations[0].translated_text)
        stream = self.server.stub.TranslateStream(self.request, timeout=60)
        self.refused(lambda: list(stream), grpc.StatusCode.UNAUTHENTICATED)
        detect = pb2.DetectLanguageRequest(contents=["A dog runs in the park."])
        self.refused(lambda: self.server.stub.DetectLanguage(detect, timeout=30),
                     grpc.StatusCode.UNAUTHENTICATED)
        self.assertEqual(self.server.stub.DetectLanguage(
            detect, metadata=(("x-api-key", ALICE),), timeout=30)
            .detections[0].languages[0].language_code, "en")
        # What the server serves is no secret.
        self.assertEqual(len(self.server.stub.ListModels(pb2.ListModelsRequest(),
                                                         timeout=30).models), 1)

    def test_2_a_key_over_its_rate_waits_and_others_go_on(self):
        bob = (("x-api-key", BOB),)
        # Refused requests use none of the quota: only admitted work is charged.
        invalid = pb2.TranslateRequest(contents=["A dog."],
                                       options=pb2.DecodingOptions(beam_size=99))
        for _ in range(3):
            self.refused(lambda: self.server.stub.Translate(invalid, metadata=bob, timeout=60),
                         grpc.StatusCode.INVALID_ARGUMENT, "beam_size")
            self.refused(lambda: self.server.stub.DetectLanguage(
                pb2.DetectLanguageRequest(contents=[]), metadata=bob, timeout=30),
                grpc.StatusCode.INVALID_ARGUMENT, "contents is empty")
        self.translate(bob)
        self.translate(bob)
        details = self.refused(lambda: self.translate(bob), grpc.StatusCode.RESOURCE_EXHAUSTED,
                               "2 requests per minute; retry in")
        self.assertNotIn(BOB, details)
        for _ in range(5):
            self.translate((("x-api-key", ALICE),))

    def test_3_http_and_libretranslate_take_keys(self):
        port = self.server.http_port
        status, body = http(port, "/v1/translate", {"contents": ["A dog."]})
        self.assertEqual(status, 401, body)
        self.assertEqual(body["code"], grpc.StatusCode.UNAUTHENTICATED.value[0])
        status, body = http(port, "/v1/translate", {"contents": ["A dog."]},
                            {"Authorization": f"Bearer {ALICE}"})
        self.assertEqual(status, 200, body)
        expected = self.translate((("x-api-key", ALICE),)).translations[0].translated_text
        client = LibreTranslateAPI(f"http://127.0.0.1:{port}/", api_key=ALICE)
        self.assertEqual(client.translate("A dog runs in the park.", "en", "de"), expected)
        self.assertEqual(client.languages()[1]["code"], "en")
        with self.assertRaises(urllib.error.HTTPError) as refused:
            LibreTranslateAPI(f"http://127.0.0.1:{port}/").translate("A dog.", "en", "de")
        self.assertEqual(refused.exception.code, 403)
        self.assertIn("API key", json.loads(refused.exception.read())["error"])
        # The key is checked before the body is read: a malformed body without a valid key is
        # refused for its key, not parsed.
        for headers in ({}, {"X-API-Key": "not-a-key"}):
            status, body = http(port, "/v1/translate", b'{"contents": [[[[', headers)
            self.assertEqual(status, 401, body)
            self.assertIn("API key", body["message"])
        status, body = http(port, "/translate", b'{"q": [[[[', {"X-API-Key": "not-a-key"})
        self.assertEqual(status, 403, body)
        self.assertIn("API key is not valid", body["error"])

    def test_4_the_admin_service_takes_keys_too(self):
        channel = grpc.insecure_channel(f"127.0.0.1:{self.server.admin_port}")
        admin = admin_pb2_grpc.ModelAdminStub(channel)
        request = admin_pb2.ReloadModelRequest()
        self.refused(lambda: admin.ReloadModel(request, timeout=120),
                     grpc.StatusCode.UNAUTHENTICATED)
        reply = admin.ReloadModel(request, metadata=(("x-api-key", ALICE),), timeout=120)
        self.assertTrue(reply.model)
        channel.close()

    def test_5_sighup_reloads_the_keys(self):
        with open(self.keys_file, "w") as f:
            f.write(f"{CAROL}\n")
        self.server.process.send_signal(signal.SIGHUP)

        def carol_admitted():
            try:
                self.translate((("x-api-key", CAROL),))
                return True
            except grpc.RpcError:
                return False

        self.assertTrue(wait_until(carol_admitted, 60))
        self.refused(lambda: self.translate((("x-api-key", ALICE),)),
                     grpc.StatusCode.UNAUTHENTICATED)
        # A broken file keeps the keys in use, and the log says so.
        with open(self.keys_file, "w") as f:
            f.write("short\n")
        self.server.process.send_signal(signal.SIGHUP)
        self.assertTrue(wait_until(lambda: any("API keys kept" in line
                                               for line in self.server.stderr_lines), 60))
        self.translate((("x-api-key", CAROL),))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed, skipped = len(result.failures) + len(result.errors), len(result.skipped)
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed or not result.wasSuccessful() else 0)
