"""README.md's commands run: every fenced shell block marked `<!-- tested -->` (on the line
before its fence) runs from the repository root under `bash -eo pipefail` and must exit 0.

  <!-- tested -->           the block runs as it is;
  <!-- tested: server -->   the block runs while `xlate-server --model_dir
                            models/en-de-general --http_port 8080` serves on 127.0.0.1:50051 (HTTP 8080, metrics 9464), as
                            README's first command leaves it; the test starts that server
                            itself, and skips the block when those ports are taken.

A block whose programs are not installed (grpcurl, curl) is skipped, naming them; one that
reads ../shared/data is skipped when the data is not there. `build/cli/xlate`,
`build/server/xlate-server` and `build/cli/xlate-trainer` in a block are replaced by
$XLATE_BIN, $XLATE_SERVER_BIN and $XLATE_TRAINER_BIN when set (CTest sets them), so the
commands run against the tree CTest built. Each block gets a fresh $TMPDIR (`mktemp -d` lands
there) that is removed afterwards. Also checks that README keeps the two commands CI runs
(`.ci/run` runs `bash scripts/test.sh`, README's test command).

Run:  python3 tests/docs/test_readme_commands.py      (CTest: docs_readme_commands)
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(REPO, "README.md")
MARKER = re.compile(r"^<!--\s*tested(?::\s*([a-z-]+))?\s*-->\s*$")
BINARIES = {  # the path README uses: the environment variable that replaces it
    "build/cli/xlate": "XLATE_BIN",
    "build/server/xlate-server": "XLATE_SERVER_BIN",
    "build/cli/xlate-trainer": "XLATE_TRAINER_BIN",
}
BLOCK_SECONDS = 120
SERVER_PORTS = (50051, 9464, 8080)


def tested_blocks(text):
    """[(line number of the marker, kind, block text)] of the marked blocks; a marker not
    followed by a fenced block is an error."""
    lines = text.split("\n")
    blocks = []
    for i, line in enumerate(lines):
        marker = MARKER.match(line.strip())
        if not marker:
            continue
        j = i + 1
        if j >= len(lines) or not re.match(r"^```+\s*(sh|bash|shell)?\s*$", lines[j]):
            raise ValueError(f"README.md:{i + 1}: {line.strip()} is not followed by a ```sh "
                             "fence on the next line")
        end = next((k for k in range(j + 1, len(lines)) if lines[k].startswith("```")), None)
        if end is None:
            raise ValueError(f"README.md:{j + 1}: the fence never closes")
        blocks.append((i + 1, marker.group(1) or "", "\n".join(lines[j + 1:end])))
    return blocks


def with_built_binaries(script):
    for path, variable in BINARIES.items():
        if os.environ.get(variable):
            script = re.sub(r"(?<![\w/.-])" + re.escape(path) + r"(?![\w-])",
                            os.environ[variable], script)
    return script


def missing_programs(script):
    """Programs a block starts (first word of each command) that are not on PATH."""
    missing = []
    for command in re.split(r"\s(?:\|\||\||&&|;)\s|\n", script):
        words = [w for w in command.split() if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)]
        if words and re.fullmatch(r"[A-Za-z0-9_.+-]+", words[0]) and not shutil.which(words[0]):
            if words[0] not in missing and words[0] not in {"echo", "cd", "export"}:
                missing.append(words[0])
    return missing


def port_taken(port):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


class Server:
    """xlate-server on the default model and the default ports, as README's first command
    leaves it (without the setup and build that scripts/run_server.sh does first)."""

    def __init__(self):
        binary = os.environ.get("XLATE_SERVER_BIN") or os.path.join(REPO, "build", "server",
                                                                    "xlate-server")
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [binary, "--model_dir", os.path.join(REPO, "models", "en-de-general"),
             "--http_port", "8080", "--threads", "1"], stdout=self.log,
            stderr=subprocess.STDOUT)
        self.wait_until_serving(60)

    def wait_until_serving(self, seconds):
        import grpc
        from grpc_health.v1 import health_pb2, health_pb2_grpc
        deadline = time.monotonic() + seconds
        with grpc.insecure_channel(f"127.0.0.1:{SERVER_PORTS[0]}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise AssertionError(f"xlate-server exited ({self.process.returncode}):\n"
                                         + self.output())
                try:
                    reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1)
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        return
                except grpc.RpcError:
                    pass
                time.sleep(0.2)
        raise AssertionError("xlate-server did not serve within %d s:\n%s" % (seconds,
                                                                               self.output()))

    def output(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-4000:]

    def close(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


class ReadmeCommands(unittest.TestCase):
    def run_block(self, line, kind, script):
        script = with_built_binaries(script)
        missing = missing_programs(script)
        if missing:
            self.skipTest(f"README.md:{line}: {', '.join(missing)} not installed")
        if "../shared/data" in script and not os.path.isdir(os.path.join(REPO, "..", "shared",
                                                                         "data")):
            self.skipTest(f"README.md:{line}: ../shared/data is not there")
        server = None
        if kind == "server":
            taken = [port for port in SERVER_PORTS if port_taken(port)]
            if taken:
                self.skipTest(f"README.md:{line}: port {taken} taken; the block needs a server "
                              "of its own there")
            server = Server()
        elif kind:
            self.fail(f"README.md:{line}: unknown marker 'tested: {kind}'")
        try:
            with tempfile.TemporaryDirectory(prefix="xlate_readme_") as scratch:
                result = subprocess.run(["bash", "-eo", "pipefail", "-c", script], cwd=REPO,
                                        env=dict(os.environ, TMPDIR=scratch),
                                        capture_output=True, text=True, timeout=BLOCK_SECONDS)
        finally:
            if server:
                server.close()
        self.assertEqual(result.returncode, 0,
                         f"README.md:{line}: exit {result.returncode}\n--- block\n{script}\n"
                         f"--- stdout\n{result.stdout[-3000:]}\n--- stderr\n"
                         f"{result.stderr[-3000:]}")
        self.assertTrue(result.stdout.strip(), f"README.md:{line}: the block printed nothing")
        return result

    def test_readme_keeps_the_two_commands_ci_runs(self):
        with open(README, encoding="utf-8") as f:
            text = f.read()
        for command in ("bash scripts/run_server.sh   # set up, build, serve the default model "
                        "(gRPC 50051, HTTP and a web page 8080, metrics 9464)",
                        "bash scripts/test.sh         # set up, build, run every test"):
            self.assertIn("\n" + command + "\n", text)
        with open(os.path.join(REPO, ".ci", "run"), encoding="utf-8") as f:
            self.assertIn("bash scripts/test.sh", f.read())

    def test_the_markers_mark_blocks(self):
        with open(README, encoding="utf-8") as f:
            blocks = tested_blocks(f.read())
        self.assertGreaterEqual(len(blocks), 3, "README.md marks fewer blocks than its tour has")
        self.assertRaises(ValueError, tested_blocks, "<!-- tested -->\ntext\n")
        self.assertEqual(tested_blocks("<!-- tested: server -->\n```sh\na\nb\n```\n"),
                         [(1, "server", "a\nb")])

    def test_binaries_are_replaced_by_the_built_ones(self):
        saved = {v: os.environ.get(v) for v in BINARIES.values()}
        try:
            os.environ["XLATE_BIN"] = "/x/xlate"
            os.environ["XLATE_TRAINER_BIN"] = "/x/xlate-trainer"
            self.assertEqual(
                with_built_binaries("T=build/cli/xlate-trainer\n"
                                    "echo a | build/cli/xlate translate\n"
                                    "ls bench/build/cli/xlate build/cli/xlate-other"),
                "T=/x/xlate-trainer\necho a | /x/xlate translate\n"
                "ls bench/build/cli/xlate build/cli/xlate-other")
        finally:
            for variable, value in saved.items():
                if value is None:
                    os.environ.pop(variable, None)
                else:
                    os.environ[variable] = value


def add_block_tests():
    with open(README, encoding="utf-8") as f:
        blocks = tested_blocks(f.read())
    for line, kind, script in blocks:
        def test(self, line=line, kind=kind, script=script):
            self.run_block(line, kind, script)
        setattr(ReadmeCommands, f"test_block_at_line_{line}", test)


add_block_tests()


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed, skipped = len(result.failures) + len(result.errors), len(result.skipped)
    # "0 passed, 0 failed, N skipped" is what CTest reads as a skip (SKIP_REGULAR_EXPRESSION).
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    raise SystemExit(1 if failed else 0)
