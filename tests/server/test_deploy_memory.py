"""deploy/'s memory numbers against the server they deploy: the shipped model at the deployment's
flags (deploy/kubernetes/configmap.yaml), under a load of 32 concurrent calls of mixed options,
peaks below the Deployment's memory limit with a quarter to spare, and its memory request holds
what it keeps resident after the load. Skipped under a sanitizer (whose allocator is not the
one deployed).

Run by CTest; prints 'N passed, N failed, N skipped' and exits non-zero on failure.
"""
import os
import re
import sys
import threading
import unittest

import yaml

from harness import REPO, Server, pb2, sample_sentences

DEPLOY = os.path.join(REPO, "deploy", "kubernetes")
UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30}


def quantity_bytes(text):
    match = re.fullmatch(r"(\d+)(Ki|Mi|Gi)?", str(text))
    if not match:
        raise ValueError(f"a memory quantity this test does not read: {text}")
    return int(match[1]) * UNITS.get(match[2], 1)


def process_memory(pid):
    """(resident now, peak resident) in bytes, from /proc."""
    fields = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0]) * 1024
    return fields["VmRSS"], fields["VmHWM"]


@unittest.skipIf(os.environ.get("XLATE_SANITIZER"), "memory under a sanitizer is not deployed")
class DeployedMemory(unittest.TestCase):
    def test_the_shipped_model_fits_the_deployments_memory(self):
        with open(os.path.join(DEPLOY, "deployment.yaml")) as f:
            deployment = yaml.safe_load(f)
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        limit = quantity_bytes(container["resources"]["limits"]["memory"])
        request = quantity_bytes(container["resources"]["requests"]["memory"])
        with open(os.path.join(DEPLOY, "configmap.yaml")) as f:
            flags = [f"--{name[len('FLAGS_'):]}={value}"
                     for name, value in yaml.safe_load(f)["data"].items()
                     if name.startswith("FLAGS_")]
        server = Server(*flags, model_dir=os.environ["XLATE_DEFAULT_MODEL"])
        try:
            sentences = sample_sentences(200)
            failures = []

            def client(seed):
                for round_ in range(6):
                    first = (seed * 7 + round_ * 13) % len(sentences)
                    texts = [" ".join(sentences[first:first + 3])] + sentences[first:first + 4]
                    options = pb2.DecodingOptions(beam_size=4 + seed % 5, n_best=1 + seed % 3)
                    request = pb2.TranslateRequest(contents=texts, options=options)
                    if seed % 4 == 0:
                        request.alignment.CopyFrom(pb2.AlignmentOptions())
                    try:
                        server.stub.Translate(request, timeout=600)
                    except Exception as error:  # noqa: BLE001 (reported below)
                        failures.append(error)

            clients = [threading.Thread(target=client, args=(seed,)) for seed in range(32)]
            for thread in clients:
                thread.start()
            for thread in clients:
                thread.join()
            self.assertEqual(failures, [])
            resident, peak = process_memory(server.process.pid)
        finally:
            server.close()
        print(f"peak {peak / 2**20:.0f} MiB, resident after the load {resident / 2**20:.0f} MiB; "
              f"request {request / 2**20:.0f} MiB, limit {limit / 2**20:.0f} MiB")
        self.assertLessEqual(peak * 1.25, limit, "the limit leaves under a quarter to spare")
        self.assertLessEqual(resident, request, "the request is below what stays resident")


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed, skipped = len(result.failures) + len(result.errors), len(result.skipped)
    # "0 passed, 0 failed, N skipped" is what CTest reads as a skip (SKIP_REGULAR_EXPRESSION).
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed or not result.wasSuccessful() else 0)
