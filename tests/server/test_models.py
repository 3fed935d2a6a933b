"""Several models in one server, and reloads without downtime, through real gRPC clients.

- Reload under load: four clients call Translate and TranslateStream on Multi30k sentences
  without pause while the served model (the tiny fixture) is replaced by the shipped
  English-German model through ModelAdmin/ReloadModel, then reloaded by SIGHUP, then offered a
  broken model. No call fails; every answer is the old model's or the new model's translation
  of its sentence, and a client that has seen the new model never sees the old one again;
  xlate_model_info and the reload counters tell what happened.
- Several models: --model NAME=DIR twice; requests go by name, by language code, or to the
  first; NOT_FOUND lists the models; metrics are labelled by model.
- Flags: the admin service is off by default and never on the clients' port; bad --model
  values and a model that does not load stop the server with a message.

Run by CTest; prints 'N passed, N failed' and exits non-zero on failure.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import grpc

from harness import (MODEL_DIR, SERVER_BIN, Server, admin_pb2, admin_pb2_grpc, pb2,
                     sample_sentences, wait_until)
from test_server_e2e import counter, scrape

DEFAULT_MODEL = os.environ["XLATE_DEFAULT_MODEL"]


def model_copy(workdir, name, source_lang="en", target_lang="de", source=MODEL_DIR):
    """A copy of a model directory with its config's languages set."""
    directory = os.path.join(workdir, name)
    shutil.copytree(source, directory)
    path = os.path.join(directory, "config.json")
    with open(path) as f:
        config = json.load(f)
    config.update(source_lang=source_lang, target_lang=target_lang)
    with open(path, "w") as f:
        json.dump(config, f)
    return directory


class ReloadUnderLoad(unittest.TestCase):
    def setUp(self):
        self.workdir = tempfile.mkdtemp(prefix="xlate_reload_")
        self.first = model_copy(self.workdir, "first")
        self.server = Server(f"--model=tiny={self.first}", "--admin_address=127.0.0.1:0",
                             model_dir=None)
        self.admin = admin_pb2_grpc.ModelAdminStub(
            grpc.insecure_channel(f"127.0.0.1:{self.server.admin_port}"))

    def tearDown(self):
        self.server.close()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def translate(self, sentence, stream):
        request = pb2.TranslateRequest(contents=[sentence])
        if not stream:
            return self.server.stub.Translate(request, timeout=120).translations[0].translated_text
        *_, last = self.server.stub.TranslateStream(request, timeout=120)
        return last.response.translations[0].translated_text

    def test_no_call_fails_across_reloads_and_each_finishes_on_one_model(self):
        sentences = sample_sentences(12)
        old = {s: self.translate(s, False) for s in sentences}

        stop = threading.Event()
        answers = [[] for _ in range(4)]  # per client: (sentence, text) in order
        failures = []

        def client(index):
            k = index
            while not stop.is_set():
                sentence = sentences[k % len(sentences)]
                k += 1
                try:
                    answers[index].append((sentence, self.translate(sentence, index % 2 == 1)))
                except grpc.RpcError as error:
                    failures.append(f"{error.code()}: {error.details()}")

        clients = [threading.Thread(target=client, args=(i,)) for i in range(4)]
        for thread in clients:
            thread.start()
        try:
            self.assertTrue(wait_until(lambda: min(map(len, answers)) >= 3, 120))
            reply = self.admin.ReloadModel(admin_pb2.ReloadModelRequest(
                model="tiny", model_dir=DEFAULT_MODEL), timeout=300)
            self.assertEqual((reply.model, reply.model_dir), ("tiny", DEFAULT_MODEL))
            self.assertEqual((reply.source_language, reply.target_language), ("en", "de"))
            self.assertGreater(reply.load_seconds, 0)
            swapped = [len(a) for a in answers]
            self.assertTrue(wait_until(
                lambda: all(len(a) >= n + 3 for a, n in zip(answers, swapped)), 120))

            self.server.process.send_signal(signal.SIGHUP)
            self.assertTrue(wait_until(lambda: counter(
                scrape(self.server), 'xlate_model_reloads_total{result="loaded"}') == 2, 120))

            broken = model_copy(self.workdir, "broken")
            with open(os.path.join(broken, "model.safetensors"), "r+b") as f:
                f.truncate(1000)
            with self.assertRaises(grpc.RpcError) as refused:
                self.admin.ReloadModel(admin_pb2.ReloadModelRequest(model_dir=broken),
                                       timeout=300)
            self.assertEqual(refused.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
            self.assertIn(f'cannot reload model "tiny" from {broken}', refused.exception.details())
            self.assertIn("the model loaded before keeps serving", refused.exception.details())
            after_refusal = [len(a) for a in answers]
            self.assertTrue(wait_until(
                lambda: all(len(a) >= n + 2 for a, n in zip(answers, after_refusal)), 120))
        finally:
            stop.set()
            for thread in clients:
                thread.join(300)

        self.assertEqual(failures, [])
        new = {s: self.translate(s, False) for s in sentences}
        self.assertNotEqual(old, new, "the shipped model translates like the tiny one?")
        for index, client_answers in enumerate(answers):
            seen_new = False
            for sentence, text in client_answers:
                self.assertIn(text, (old[sentence], new[sentence]), f"client {index}")
                if text == new[sentence] and text != old[sentence]:
                    seen_new = True
                elif seen_new:
                    self.fail(f"client {index} got the old model's answer after the new one's")
            self.assertTrue(seen_new, f"client {index} never got the new model")

        text = scrape(self.server)
        self.assertEqual(counter(text, 'xlate_model_reloads_total{model="tiny",result="loaded"}'),
                         2)
        self.assertEqual(counter(text, 'xlate_model_reloads_total{model="tiny",result="failed"}'),
                         1)
        info = [line for line in text.splitlines() if line.startswith("xlate_model_info{")]
        self.assertEqual(len(info), 1, info)
        self.assertIn(f'dir="{DEFAULT_MODEL}"', info[0])
        self.assertIn('name="tiny"', info[0])
        self.assertEqual(counter(text, 'xlate_requests_total{model="tiny"}'),
                         counter(text, 'xlate_requests_total{code="OK",model="tiny"}'))
        log = "".join(self.server.stderr_lines)
        self.assertIn("SIGHUP: reloading every model", log)
        self.assertIn('reload refused: cannot reload model "tiny"', log)
        self.assertEqual(self.server.terminate(), 0)


class ReloadOfAFileBeingReplaced(unittest.TestCase):
    """A model file truncated or copied over while a reload reads it (a deploy, `kubectl cp`):
    the reload is refused or loads a whole file, the server keeps serving, never crashes (it
    read the weights through a memory map once, and a truncated file's pages raised SIGBUS)."""

    def test_the_server_survives_and_keeps_serving(self):
        workdir = tempfile.mkdtemp(prefix="xlate_replaced_")
        served = model_copy(workdir, "served", source=DEFAULT_MODEL)
        weights = os.path.join(served, "model.safetensors")
        with open(weights, "rb") as f:
            whole = f.read()
        server = Server(f"--model=m={served}", "--admin_address=127.0.0.1:0", model_dir=None)
        try:
            admin = admin_pb2_grpc.ModelAdminStub(
                grpc.insecure_channel(f"127.0.0.1:{server.admin_port}"))
            sentence = "A dog runs through the snow."
            expected = server.stub.Translate(pb2.TranslateRequest(contents=[sentence]),
                                             timeout=120).translations[0].translated_text
            outcomes = []
            for attempt, delay_ms in enumerate((0, 1, 2, 4, 6, 8, 10, 15, 20, 30) * 2):
                with open(weights, "wb") as f:
                    f.write(whole)
                result = {}

                def reload():
                    try:
                        admin.ReloadModel(admin_pb2.ReloadModelRequest(model="m"), timeout=300)
                        result["code"] = grpc.StatusCode.OK
                    except grpc.RpcError as error:
                        result["code"], result["details"] = error.code(), error.details()

                caller = threading.Thread(target=reload)
                if attempt % 2:
                    caller.start()
                    time.sleep(delay_ms / 1000)
                    os.truncate(weights, 1000)  # as a failed sync leaves it
                else:
                    caller.start()
                    time.sleep(delay_ms / 1000)
                    with open(weights, "wb") as f:  # as cp does: truncate, then write
                        f.write(whole[:len(whole) // 3])
                caller.join(300)
                self.assertIsNone(server.process.poll(),
                                  f"the server died (status {server.process.poll()}) "
                                  f"after a reload {delay_ms} ms before the file was replaced")
                self.assertIn(result.get("code"), (grpc.StatusCode.OK,
                                                   grpc.StatusCode.FAILED_PRECONDITION), result)
                if result["code"] != grpc.StatusCode.OK:
                    self.assertIn("the model loaded before keeps serving", result["details"])
                outcomes.append(result["code"])
                reply = server.stub.Translate(pb2.TranslateRequest(contents=[sentence]),
                                              timeout=120)
                self.assertEqual(reply.translations[0].translated_text, expected)
            # Some reloads raced the truncation (most are refused: the file is cut at once).
            self.assertIn(grpc.StatusCode.FAILED_PRECONDITION, outcomes)
            with open(weights, "wb") as f:
                f.write(whole)
            server.process.send_signal(signal.SIGHUP)
            self.assertTrue(wait_until(lambda: counter(
                scrape(server), 'xlate_model_reloads_total{result="loaded"}') >=
                1 + outcomes.count(grpc.StatusCode.OK), 120))
            self.assertEqual(server.terminate(), 0)
        finally:
            server.close()
            shutil.rmtree(workdir, ignore_errors=True)


class SeveralModels(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workdir = tempfile.mkdtemp(prefix="xlate_models_")
        cls.reverse = model_copy(cls.workdir, "reverse", "de", "en")
        cls.server = Server(f"--model=en-de={MODEL_DIR}", f"--model=de-en={cls.reverse}",
                            model_dir=None)
        cls.stub = cls.server.stub

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        shutil.rmtree(cls.workdir, ignore_errors=True)

    def model_of(self, **fields):
        return self.stub.Translate(pb2.TranslateRequest(contents=["A dog runs."], **fields),
                                   timeout=60).model

    def test_list_models_names_each_with_its_languages_and_placement(self):
        reply = self.stub.ListModels(pb2.ListModelsRequest(), timeout=30)
        self.assertEqual([(m.name, m.source_language_code, m.target_language_code)
                          for m in reply.models], [("en-de", "en", "de"), ("de-en", "de", "en")])
        for model in reply.models:
            self.assertEqual((model.device, model.compute_type), ("cpu", "float32"))
            self.assertEqual(list(model.target_language_codes), [])

    def test_requests_go_by_name_then_language_then_to_the_first(self):
        self.assertIn('serving models "en-de", "de-en" on', "".join(self.server.stderr_lines))
        self.assertEqual(self.model_of(), "en-de")
        self.assertEqual(self.model_of(model="de-en"), "de-en")
        self.assertEqual(self.model_of(source_language_code="de"), "de-en")
        self.assertEqual(self.model_of(target_language_code="en-GB"), "de-en")
        self.assertEqual(self.model_of(source_language_code="en", target_language_code="de"),
                         "en-de")
        # A stream goes the same way.
        *_, last = self.stub.TranslateStream(pb2.TranslateRequest(
            contents=["A dog runs."], source_language_code="de"), timeout=60)
        self.assertEqual(last.response.model, "de-en")

    def test_unknown_models_and_pairs_name_what_is_served(self):
        served = '"en-de" (en to de), "de-en" (de to en)'
        with self.assertRaises(grpc.RpcError) as unknown:
            self.model_of(model="fr-en")
        self.assertEqual(unknown.exception.code(), grpc.StatusCode.NOT_FOUND)
        self.assertEqual(unknown.exception.details(),
                         f'model "fr-en" is not served here; this server serves {served}')
        with self.assertRaises(grpc.RpcError) as unserved:
            self.model_of(source_language_code="fr")
        self.assertEqual(unserved.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn(f'no served model translates from "fr"', unserved.exception.details())
        self.assertIn(served, unserved.exception.details())
        # A name with codes its model does not serve: that model's own language check.
        with self.assertRaises(grpc.RpcError) as mismatch:
            self.model_of(model="en-de", source_language_code="de")
        self.assertIn('source_language_code "de" is not served', mismatch.exception.details())

    def test_metrics_are_labelled_by_model(self):
        before = scrape(self.server)
        self.model_of(model="de-en")
        self.model_of(model="de-en")
        with self.assertRaises(grpc.RpcError):
            self.model_of(model="nope")
        after = scrape(self.server)
        ok = 'xlate_requests_total{code="OK",model="de-en"}'
        self.assertEqual(counter(after, ok) - counter(before, ok), 2)
        # Refused before it reached a model: counted without one.
        not_found = 'xlate_requests_total{code="NOT_FOUND",model=""}'
        self.assertEqual(counter(after, not_found) - counter(before, not_found), 1)
        generated = 'xlate_generated_tokens_total{model="de-en"}'
        self.assertGreater(counter(after, generated), counter(before, generated))
        for name in ("en-de", "de-en"):
            self.assertEqual(counter(after, f'xlate_queue_capacity{{model="{name}"}}'), 4096)
            self.assertEqual(counter(after, f'xlate_model_info{{name="{name}"}}'), 1)
        self.assertIn('source_lang="de"', [line for line in after.splitlines()
                                           if 'xlate_model_info{' in line and
                                           'name="de-en"' in line][0])


class ServerFlags(unittest.TestCase):
    def test_admin_is_off_by_default_and_never_on_the_clients_port(self):
        server = Server()
        try:
            self.assertIsNone(server.admin_port)
            with self.assertRaises(grpc.RpcError) as caught:
                admin_pb2_grpc.ModelAdminStub(server.channel).ReloadModel(
                    admin_pb2.ReloadModelRequest(), timeout=30)
            self.assertEqual(caught.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
        finally:
            server.close()
        server = Server("--admin_address=127.0.0.1:0")
        try:
            with self.assertRaises(grpc.RpcError) as caught:
                admin_pb2_grpc.ModelAdminStub(server.channel).ReloadModel(
                    admin_pb2.ReloadModelRequest(), timeout=30)
            self.assertEqual(caught.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
            admin = admin_pb2_grpc.ModelAdminStub(
                grpc.insecure_channel(f"127.0.0.1:{server.admin_port}"))
            with self.assertRaises(grpc.RpcError) as unknown:
                admin.ReloadModel(admin_pb2.ReloadModelRequest(model="other"), timeout=30)
            self.assertEqual(unknown.exception.code(), grpc.StatusCode.NOT_FOUND)
            self.assertIn('model "other" is not served here', unknown.exception.details())
        finally:
            server.close()

    def test_an_admin_address_on_the_clients_port_is_refused(self):
        # The same port on the same host, on the wildcard the clients' host is, or on
        # "localhost": each would have shared the port (gRPC binds with SO_REUSEPORT) and split
        # connections between the two services.
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        for host, admin in (("127.0.0.1", f"127.0.0.1:{port}"), ("0.0.0.0", f"127.0.0.1:{port}"),
                            ("127.0.0.1", f"0.0.0.0:{port}"), ("127.0.0.1", f"localhost:{port}")):
            result = subprocess.run(
                [SERVER_BIN, f"--model_dir={MODEL_DIR}", f"--host={host}", f"--port={port}",
                 "--metrics_port=0", f"--admin_address={admin}"],
                capture_output=True, text=True, timeout=120)
            self.assertEqual(result.returncode, 2, (host, admin, result.stderr))
            self.assertIn(f"overlaps the clients' address {host}:{port}", result.stderr)
        # Another process's listener on the admin port (no SO_REUSEPORT): refused too.
        with socket.socket() as taken:
            taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            result = subprocess.run(
                [SERVER_BIN, f"--model_dir={MODEL_DIR}", "--host=127.0.0.1", "--port=0",
                 "--metrics_port=0", f"--admin_address=127.0.0.1:{taken.getsockname()[1]}"],
                capture_output=True, text=True, timeout=120)
            self.assertEqual(result.returncode, 2, result.stderr)
            self.assertIn("cannot listen on --admin_address", result.stderr)

    def test_a_public_admin_address_without_tls_is_warned_about(self):
        server = Server("--admin_address=0.0.0.0:0")
        try:
            self.assertTrue(any("is not a loopback address and there is no TLS" in line
                                for line in server.stderr_lines), server.stderr_lines)
        finally:
            server.close()

    def test_bad_model_flags_stop_the_server_with_a_message(self):
        for flags, code, message in (
                ([f"--model_dir={MODEL_DIR}", f"--model=x={MODEL_DIR}"], 2,
                 "give either --model_dir or --model, not both"),
                ([f"--model==/{MODEL_DIR}"], 2, "write NAME=DIR"),
                ([f"--model=a={MODEL_DIR}", f"--model=a={MODEL_DIR}"], 1,
                 'two models are named "a"'),
                ([f"--model_name=x"], 2, "--model_name goes with --model_dir"),
                (["--model=a=/nonexistent/model"], 1,
                 'cannot serve model "a" from /nonexistent/model'),
                ([], 2, "name a model to serve"),
                ([f"--model_dir={MODEL_DIR}", "--admin_address=256.0.0.1:1"], 2,
                 "cannot listen on --admin_address 256.0.0.1:1"),
                ([f"--model_dir={MODEL_DIR}", "--admin_address=127.0.0.1"], 2,
                 '--admin_address "127.0.0.1" has no port')):
            result = subprocess.run([SERVER_BIN, *flags, "--port=0", "--metrics_port=0"],
                                    capture_output=True, text=True, timeout=120)
            self.assertEqual(result.returncode, code, (flags, result.stderr))
            self.assertIn(message, result.stderr, flags)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed, skipped = len(result.failures) + len(result.errors), len(result.skipped)
    # "0 passed, 0 failed, N skipped" is what CTest reads as a skip (SKIP_REGULAR_EXPRESSION).
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed else 0)
