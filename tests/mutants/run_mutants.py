#!/usr/bin/env python3
"""Mutation testing of the rules that matter: does the test suite catch one-line mutants?

Each mutant below changes one line of the source (an exact snippet that must occur exactly once
in its file, so that the list fails loudly when the code moves on) in a scratch copy of the
repository, rebuilds the targets it names, and runs the tests that should catch it. A mutant is
caught when the rebuild fails ("does not compile"), a test fails or crashes, or a test runs past
--test_timeout; it is NOT caught when every test it ran passed. The file is written back after
every mutant, whatever happened (a build or test error, Ctrl-C, SIGTERM); nothing is rebuilt
after the last one (the next run's first build catches up).

Usage (from anywhere; a full first build at -j1 takes long, later runs are incremental):

    nice -n 10 python3 tests/mutants/run_mutants.py --jobs 1
    python3 tests/mutants/run_mutants.py --list            # the mutants, their snippets, tests
    python3 tests/mutants/run_mutants.py --check           # snippets still in sync? (no build)
    nice -n 10 python3 tests/mutants/run_mutants.py --only adam_step_size,loss_scaler_growth
    nice -n 10 python3 tests/mutants/run_mutants.py --json_out /tmp/mutants.json

The scratch copy. `--scratch DIR` (default: a sibling of the repository root named
`<repo>-mutants`, e.g. /work/main-mutants next to /work/main, where the build's default
`../shared/data` still resolves) is a `git clone` of this repository checked out at its HEAD:
uncommitted changes of the working tree are NOT tested. A scratch that exists is reused: it is
moved to the repository's current HEAD (fetch + detached checkout) and any tracked file a killed
run left mutated is checked out again. There, once per run:

    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DXLATE_DATA_DIR=<data> [--cmake_arg ...]
    cmake --build build -j N                     (N = --jobs, default 2)
    ctest -R '^fixture_tiny_model$'              (only when build/fixtures/ lacks the tiny model)

<data> is --data_dir, default the repository's ../shared/data (passed explicitly, so a scratch
elsewhere finds it too). `--cmake_arg=-DXLATE_CUDA=OFF` skips the CUDA backend: the tests here
run on the CPU, and a mutant of a header that .cu files include (rules/beam_search.h,
rules/dropout_mask.h) would otherwise recompile them with nvcc for every architecture. The
configure step reuses the build's CMakeCache.txt, so an option given once stays.

Baseline. Before any mutant, every test command of the selected mutants runs once on the
unmutated build (skip with --no_baseline): a test that already fails would make every mutant
look caught, so a failing baseline stops the run (exit status 2). It also refuses a command
that runs no test at all (a gtest filter or ctest regex that matches nothing), or whose every
test skipped.

Each mutant: its name, the file (relative to the repository root), the original snippet and its
replacement, the targets to rebuild (empty: the whole build; the gtest binaries it runs are
always added), the gtest runs as (binary, --gtest_filter) pairs (run directly, from
build/tests/...), and a ctest -R regex for CTest-only tests (Python ones), run with
--fixture-exclude-setup tiny_model (the fixture was made once). Logs: build/mutants-logs/ in the
scratch copy, one build and one test log per mutant.

Output: a table mutant | file | tests run | result | seconds (apply + rebuild + tests, so the
first mutant after a header mutant also pays to recompile what the restored header touches),
and --json_out FILE writes it as JSON. Exit status: 0 when every selected mutant is caught, 1
when one is not (or its tests could not be run), 2 when the run could not start (snippets out of
sync, scratch, configure, build, fixture or baseline failures).

Python 3 standard library only.
"""
import argparse
import dataclasses
import fcntl
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))

# The gtest binaries, by CMake target name, relative to the build directory.
GTEST_BINARIES = {
    "xlate_tests": "tests/xlate_tests",
    "xlate_server_unit_tests": "tests/xlate_server_unit_tests",
    "xlate_trainer_tests": "tests/trainer/xlate_trainer_tests",
    "xlate_evaluation_tests": "tests/evaluation/xlate_evaluation_tests",
    "xlate_kernel_tests": "tests/xlate_kernel_tests",
}


@dataclasses.dataclass(frozen=True)
class Mutant:
    name: str
    file: str
    original: str
    replacement: str
    rule: str                          # what the mutant breaks, in a few words
    targets: tuple = ()                # CMake targets to rebuild; () = the whole build
    gtest: tuple = ()                  # ((binary target, gtest filter), ...)
    ctest: str = ""                    # a ctest -R regex, or ""

    def build_targets(self):
        if not self.targets:
            return ()
        extra = tuple(b for b, _ in self.gtest if b not in self.targets)
        return tuple(self.targets) + extra

    def test_commands(self):
        """[(kind, what)]: ("gtest", (binary, filter)) and ("ctest", regex)."""
        commands = [("gtest", g) for g in self.gtest]
        if self.ctest:
            commands.append(("ctest", self.ctest))
        return commands


SEARCH_TESTS = "*Search*"  # TinyModelSearch (brute force), Search (hand-worked), DeviceBeamSearch

MUTANTS = [
    Mutant(
        name="length_penalty",
        file="rules/beam_search.h",
        original="powf((5.f + static_cast<float>(length)) / 6.f, alpha)",
        replacement="powf((6.f + static_cast<float>(length)) / 6.f, alpha)",
        rule="GNMT length penalty ((5 + |Y|) / 6)^alpha",
        targets=("xlate_tests",),
        gtest=(("xlate_tests", SEARCH_TESTS),),
    ),
    Mutant(
        name="beam_stop_bound",
        file="rules/beam_search.h",
        original="const float bound = best_live / length_penalty(max_length, alpha);",
        replacement="const float bound = best_live / length_penalty(1, alpha);",
        rule="early stop only when no live hypothesis can win (bound at max length)",
        targets=("xlate_tests",),
        gtest=(("xlate_tests", SEARCH_TESTS),),
    ),
    Mutant(
        name="beam_candidates",
        file="engine/decoding/device_beam_search.cc",
        original="candidates_ = std::max(candidates_, 2 * sentence.beam + 1);",
        replacement="candidates_ = std::max(candidates_, sentence.beam);",
        rule="each row offers 2B+1 candidates to the step (B ends cannot starve the beam)",
        targets=("xlate_tests",),
        gtest=(("xlate_tests", SEARCH_TESTS),),
    ),
    Mutant(
        name="log_softmax_max_shift",
        file="engine/ops/cpu/top_k_cpu.cc",
        original="const float shift = offset - best.front().first - std::log(sum);",
        replacement="const float shift = offset - std::log(sum);",
        rule="log-softmax of the fused top-k: x - max - log sum exp(x - max)",
        targets=("xlate_tests",),
        gtest=(("xlate_tests", "OpsCpu.*:*GoldenModel*:*Search*:*HfMarian*"),),
    ),
    Mutant(
        name="layer_norm_eps",
        file="engine/model_config.h",
        original="constexpr float kLayerNormEps = 1e-5f;",
        replacement="constexpr float kLayerNormEps = 1e-4f;",
        rule="layer norm epsilon 1e-5 (PyTorch's, Hugging Face's Marian)",
        targets=("xlate_tests",),
        gtest=(("xlate_tests", "*GoldenModel*:*HfMarian*:*HfM2M100*"),),
    ),
    Mutant(
        name="adam_step_size",
        file="trainer/optim/adam.cc",
        original="step.step_size = static_cast<float>(lr / correction1);",
        replacement="step.step_size = static_cast<float>(lr / correction2);",
        rule="Adam's bias correction of the first moment",
        targets=("xlate_trainer_tests",),
        gtest=(("xlate_trainer_tests", "Adam*"),),
    ),
    Mutant(
        name="loss_scaler_growth",
        file="trainer/optim/loss_scaler.cc",
        original="state_.scale *= 2;",
        replacement="state_.scale *= 4;",
        rule="dynamic loss scale doubles after growth_interval finite steps",
        targets=("xlate_trainer_tests",),
        gtest=(("xlate_trainer_tests", "DynamicLossScaler.*"),),
    ),
    Mutant(
        # The scheduler no longer groups sentences by options (they travel per sentence); the
        # equality's one use is the continuous decoder's check of a sentence's options.
        name="options_equality",
        file="engine/translator.cc",
        original="return all_fields(a) == all_fields(b);",
        replacement="return a.beam_size == b.beam_size;",
        rule="TranslationOptions == compares every field (a sentence whose options equal its "
             "neighbour's is not validated again)",
        targets=("xlate_tests",),
        gtest=(("xlate_tests", "TranslatorTest.ContinuousDecoder*"),),
    ),
    Mutant(
        name="dropout_keep_scale",
        file="rules/dropout_mask.h",
        original="DropoutMask{key, dropout_threshold(p), 1.f / (1.f - p)}",
        replacement="DropoutMask{key, dropout_threshold(p), 1.f}",
        rule="inverted dropout scales kept elements by 1/(1-p)",
        targets=("xlate_trainer_tests",),
        gtest=(("xlate_trainer_tests",
                "LayerGradients.*:*ModelGradient*:TransformerTraining.*"),),
    ),
    Mutant(
        name="bleu_brevity_penalty",
        file="evaluation/bleu.cc",
        original="? std::exp(1.0 - reference_length / hypothesis_length)",
        replacement="? std::exp(1.0 - hypothesis_length / reference_length)",
        rule="BLEU brevity penalty exp(1 - r/c) for c < r",
        targets=("xlate_evaluation_tests", "xlate"),
        gtest=(("xlate_evaluation_tests", "Bleu.*"),),
        ctest="^bleu_vs_sacrebleu$",
    ),
    Mutant(
        name="segments_blank_rule",
        file="document/text_segments.cc",
        original="} else if (content_begin < content_end) {",
        replacement="} else {",
        rule="a blank segment is kept as a separator, never a sentence to translate",
        targets=("xlate_tests", "xlate-server"),
        gtest=(("xlate_tests", "SegmentedTexts.*:CodePoints.*"),),
        ctest="^server_test_paragraphs$",
    ),
    Mutant(
        name="pre_norm_next_norm",
        file="engine/transformer.cc",
        original="stream.input = add_and_norm(sublayer_out, sublayer_out, stream.x, next);",
        replacement="stream.input = add_and_norm(sublayer_out, sublayer_out, stream.x, own);",
        rule="pre-norm (M2M100/NLLB): the sum is normed by the NEXT sublayer's norm",
        targets=("xlate_tests",),
        gtest=(("xlate_tests", "*HfM2M100*"),),
    ),
    Mutant(
        name="forced_first_token",
        file="engine/decoder_state.cc",
        original="if (position < static_cast<int64_t>(forced.size())) {",
        replacement="if (position + 1 < static_cast<int64_t>(forced.size())) {",
        rule="forced start tokens (M2M100's target language) are all forced",
        targets=("xlate_tests",),
        gtest=(("xlate_tests", "*HfM2M100*"),),
    ),
]


class Failure(Exception):
    """The run cannot go on (exit status 2)."""


class Terminated(BaseException):
    pass


def on_sigterm(signum, frame):
    raise Terminated(f"signal {signum}")


def log(message):
    print(message, file=sys.stderr, flush=True)


def run(command, cwd, log_path=None, timeout=None, env=None):
    """Runs command; returns (returncode or None on timeout, output text). Output also goes to
    log_path (appended)."""
    started = time.time()
    # A session of its own, so that a timeout or an interruption ends the whole tree (make's
    # compilers, ctest's servers): a compiler left running could write a mutant's object file
    # after the source is restored, newer than it, and so never rebuilt.
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def kill_tree():
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    try:
        output, _ = process.communicate(timeout=timeout)
        code = process.returncode
    except subprocess.TimeoutExpired:
        kill_tree()
        output, _ = process.communicate()
        code = None
    except BaseException:
        kill_tree()
        process.wait()
        raise
    finally:
        # Whatever the leader left behind in its group (a server a test forgot) ends with it.
        if process.returncode is not None:
            kill_tree()
    text = output.decode("utf-8", errors="replace")
    if log_path:
        with open(log_path, "a", encoding="utf-8") as f:
            f.write(f"$ (cd {cwd} && {shlex.join(command)})\n")
            f.write(text)
            f.write(f"[exit {code}, {time.time() - started:.1f} s]\n\n")
    return code, text


def git(args, cwd, check=True):
    result = subprocess.run(["git", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if check and result.returncode != 0:
        raise Failure(f"git {' '.join(args)} in {cwd} failed: {result.stderr.strip()}")
    return result.stdout.strip()


def tail(text, lines=40):
    return "\n".join(text.splitlines()[-lines:])


# ----------------------------------------------------------------------------------------------
# Snippets

def snippet_problems(mutants, read):
    """read(path) -> text or None. The problems of the mutants' snippets, as lines."""
    problems = []
    for m in mutants:
        text = read(m.file)
        if text is None:
            problems.append(f"{m.name}: {m.file} does not exist")
            continue
        count = text.count(m.original)
        if count != 1:
            problems.append(f"{m.name}: {m.file} holds the original snippet {count} times "
                            f"(must be exactly once): {m.original!r}")
        if m.original == m.replacement:
            problems.append(f"{m.name}: the replacement equals the original")
    return problems


def read_in(root):
    def read(path):
        full = os.path.join(root, path)
        if not os.path.isfile(full):
            return None
        with open(full, encoding="utf-8") as f:
            return f.read()
    return read


# ----------------------------------------------------------------------------------------------
# Scratch copy and build

def prepare_scratch(repo, scratch):
    if not os.path.exists(scratch):
        log(f"cloning {repo} into {scratch}")
        git(["clone", "--quiet", repo, scratch], cwd=os.path.dirname(scratch) or ".")
    elif not os.path.isdir(os.path.join(scratch, ".git")):
        raise Failure(f"{scratch} exists and is not a git clone: choose another --scratch")
    dirty = git(["status", "--porcelain", "--untracked-files=no"], cwd=scratch)
    if dirty:
        log(f"the scratch copy has modified tracked files (a killed run?); checking them out:\n"
            f"{dirty}")
        git(["checkout", "--", "."], cwd=scratch)
    git(["fetch", "--quiet", repo, "HEAD"], cwd=scratch)
    commit = git(["rev-parse", "FETCH_HEAD"], cwd=scratch)
    if git(["rev-parse", "HEAD"], cwd=scratch) != commit:
        git(["checkout", "--quiet", "--detach", commit], cwd=scratch)
    return commit


def configure_and_build(scratch, args, logs):
    build = os.path.join(scratch, "build")
    configure = ["cmake", "-S", ".", "-B", "build", "-DCMAKE_BUILD_TYPE=Release",
                 f"-DXLATE_DATA_DIR={args.data_dir}", *args.cmake_arg]
    log("configuring: " + shlex.join(configure))
    code, text = run(configure, scratch, os.path.join(logs, "configure.log"))
    if code != 0:
        raise Failure("configure failed:\n" + tail(text))
    started = time.time()
    log(f"building everything (-j{args.jobs}; log {logs}/build.log)")
    code, text = run(["cmake", "--build", "build", "-j", str(args.jobs)], scratch,
                     os.path.join(logs, "build.log"))
    if code != 0:
        raise Failure("the unmutated build failed:\n" + tail(text))
    log(f"built in {time.time() - started:.0f} s")
    if not os.path.isfile(os.path.join(build, "fixtures", "tiny", "model.safetensors")):
        log("making the test fixtures (ctest -R fixture_tiny_model)")
        code, text = run(["ctest", "--test-dir", "build", "-R", "^fixture_tiny_model$",
                          "--output-on-failure"], scratch, os.path.join(logs, "fixture.log"))
        if code != 0:
            raise Failure("the fixture test failed:\n" + tail(text))


# ----------------------------------------------------------------------------------------------
# Tests

@dataclasses.dataclass
class TestOutcome:
    label: str          # e.g. "xlate_tests '*Search*'"
    ran: int = 0
    failed: int = 0
    skipped: int = 0
    code: object = 0    # exit status, None on timeout
    note: str = ""      # "crash", "timeout", "no tests", ...

    @property
    def bad(self):
        return self.code is None or self.code != 0

    def summary(self):
        text = f"{self.label}: {self.ran} run"
        if self.failed:
            text += f", {self.failed} failed"
        if self.skipped:
            text += f", {self.skipped} skipped"
        if self.note:
            text += f" ({self.note})"
        return text


def run_gtest(scratch, binary, gtest_filter, timeout, log_path):
    path = os.path.join(scratch, "build", GTEST_BINARIES[binary])
    outcome = TestOutcome(label=f"{binary} '{gtest_filter}'")
    if not os.path.isfile(path):
        outcome.code, outcome.note = -1, f"no binary {path}"
        return outcome
    code, text = run([path, f"--gtest_filter={gtest_filter}", "--gtest_color=no"],
                     os.path.dirname(path), log_path, timeout)
    outcome.code = code
    ran = re.search(r"\[==========\] (\d+) tests? from \d+ test suites? ran", text)
    outcome.ran = int(ran.group(1)) if ran else 0
    failed = re.search(r"\[  FAILED  \] (\d+) tests?, listed below", text)
    outcome.failed = int(failed.group(1)) if failed else 0
    skipped = re.search(r"\[  SKIPPED \] (\d+) tests?, listed below", text)
    outcome.skipped = int(skipped.group(1)) if skipped else 0
    if not ran:
        # No summary: the binary died (or timed out) mid-run. Count what it had started.
        started = re.findall(r"^\[ RUN      \] (\S+)", text, re.M)
        outcome.ran = len(started)
        outcome.failed = len(re.findall(r"^\[  FAILED  \] \S+ \(\d+ ms\)", text, re.M))
        if code is not None and code != 0:
            last = f" in {started[-1]}" if started else ""
            outcome.note = f"crashed{last}, exit {code}"
    if code is None:
        outcome.note = f"timeout after {timeout} s"
    elif code == 0 and outcome.ran == 0:
        outcome.note = "no tests"
    return outcome


def run_ctest(scratch, regex, timeout, log_path):
    outcome = TestOutcome(label=f"ctest -R '{regex}'")
    command = ["ctest", "--test-dir", "build", "-R", regex, "--fixture-exclude-setup",
               "tiny_model", "--no-tests=error", "--output-on-failure", "--timeout",
               str(timeout)]
    code, text = run(command, scratch, log_path, timeout + 60)
    outcome.code = code
    total = re.search(r"(\d+)% tests passed, (\d+) tests? failed out of (\d+)", text)
    if total:
        outcome.failed, outcome.ran = int(total.group(2)), int(total.group(3))
    outcome.skipped = len(re.findall(r"\*\*\*Skipped|\*\*\*Not Run", text))
    if code is None:
        outcome.note = f"timeout after {timeout} s"
    elif "No tests were found" in text:
        outcome.note = "no tests"
        outcome.code = outcome.code or 1
    elif re.search(r"\*\*\*Timeout", text):
        outcome.note = "timeout"
    return outcome


def run_tests(scratch, mutant_commands, timeout, log_path):
    outcomes = []
    for kind, what in mutant_commands:
        if kind == "gtest":
            outcomes.append(run_gtest(scratch, what[0], what[1], timeout, log_path))
        else:
            outcomes.append(run_ctest(scratch, what, timeout, log_path))
    return outcomes


def baseline(scratch, mutants, timeout, logs):
    commands = []
    for m in mutants:
        for command in m.test_commands():
            if command not in commands:
                commands.append(command)
    log(f"baseline: {len(commands)} test commands on the unmutated build")
    baseline_log = os.path.join(logs, "baseline.log")
    if os.path.exists(baseline_log):
        os.remove(baseline_log)
    problems = []
    for outcome in run_tests(scratch, commands, timeout, baseline_log):
        log("  " + outcome.summary())
        if outcome.bad:
            problems.append(f"{outcome.summary()}: fails without a mutant")
        elif outcome.ran == 0:
            problems.append(f"{outcome.label}: runs no test")
        elif outcome.skipped >= outcome.ran:
            problems.append(f"{outcome.label}: every test skipped")
    if problems:
        raise Failure("baseline (see " + os.path.join(logs, "baseline.log") + "):\n  " +
                      "\n  ".join(problems))


# ----------------------------------------------------------------------------------------------
# Mutants

def try_mutant(scratch, mutant, args, logs):
    """Applies, rebuilds, tests, restores. Returns the result row (a dict)."""
    path = os.path.join(scratch, mutant.file)
    with open(path, "rb") as f:
        original_bytes = f.read()
    text = original_bytes.decode("utf-8")
    if text.count(mutant.original) != 1:
        raise Failure(f"{mutant.name}: the snippet is not exactly once in {mutant.file}")
    mutated = text.replace(mutant.original, mutant.replacement, 1).encode("utf-8")
    build_log = os.path.join(logs, f"{mutant.name}.build.log")
    test_log = os.path.join(logs, f"{mutant.name}.test.log")
    for stale in (build_log, test_log):
        if os.path.exists(stale):
            os.remove(stale)
    row = {"mutant": mutant.name, "file": mutant.file, "rule": mutant.rule,
           "original": mutant.original, "replacement": mutant.replacement,
           "targets": list(mutant.build_targets()) or ["(all)"], "tests": [], "result": "",
           "caught": False, "build_seconds": 0.0, "test_seconds": 0.0, "seconds": 0.0}
    started = time.time()
    try:
        with open(path, "wb") as f:
            f.write(mutated)
        command = ["cmake", "--build", "build", "-j", str(args.jobs)]
        if mutant.build_targets():
            command += ["--target", *mutant.build_targets()]
        code, _ = run(command, scratch, build_log)
        row["build_seconds"] = round(time.time() - started, 1)
        if code != 0:
            row["result"], row["caught"] = "caught (does not compile)", True
        else:
            test_started = time.time()
            outcomes = run_tests(scratch, mutant.test_commands(), args.test_timeout, test_log)
            row["test_seconds"] = round(time.time() - test_started, 1)
            row["tests"] = [dataclasses.asdict(o) | {"summary": o.summary()} for o in outcomes]
            failing = [o for o in outcomes if o.bad]
            if any(o.note == "no tests" or o.note.startswith("no binary") for o in outcomes):
                row["result"] = "ERROR (a test command ran no test)"
            elif failing:
                failed = sum(o.failed for o in failing)
                notes = sorted({o.note for o in failing if o.note})
                detail = f"{failed} failed" if failed else ", ".join(notes) or "failed"
                if failed and notes:
                    detail += "; " + ", ".join(notes)
                row["result"], row["caught"] = f"caught ({detail})", True
            else:
                row["result"] = "NOT CAUGHT"
    finally:
        # Not to be cut short by a second Ctrl-C: the signals wait until the file is back.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            # A beat after the last object file the mutant's build wrote, so that the restored
            # source is strictly newer than every one of them (make rebuilds them next time).
            time.sleep(0.1)
            with open(path, "wb") as f:
                f.write(original_bytes)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    row["seconds"] = round(time.time() - started, 1)
    return row


def test_label(mutant):
    labels = [f"{b} {f}" for b, f in mutant.gtest]
    if mutant.ctest:
        labels.append(f"ctest {mutant.ctest}")
    return "; ".join(labels)


def print_table(rows):
    headers = ["mutant", "file", "tests run", "result", "seconds"]
    table = []
    for row in rows:
        tests = "; ".join(t["summary"] for t in row["tests"]) or "(none: build failed)"
        table.append([row["mutant"], row["file"], tests, row["result"], f"{row['seconds']:.0f}"])
    widths = [max(len(h), *(len(r[i]) for r in table)) for i, h in enumerate(headers)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    print(line(headers))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in table:
        print(line(r))


def list_mutants(mutants):
    for m in mutants:
        print(f"{m.name}: {m.rule}")
        print(f"  file:    {m.file}")
        print(f"  -        {m.original}")
        print(f"  +        {m.replacement}")
        print(f"  rebuild: {' '.join(m.build_targets()) or '(the whole build)'}")
        print(f"  tests:   {test_label(m)}")


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="See the module docstring (the README) for the details.")
    repo_default = git(["rev-parse", "--show-toplevel"], cwd=SCRIPT_DIR)
    parser.add_argument("--repo", default=repo_default,
                        help="the repository to clone (default: the one this script is in)")
    parser.add_argument("--scratch", default=None,
                        help="the scratch copy (default: <repo>-mutants beside the repository)")
    parser.add_argument("--data_dir", default=None,
                        help="XLATE_DATA_DIR (default: <repo>/../shared/data)")
    parser.add_argument("--jobs", type=int, default=2, help="build parallelism (default 2)")
    parser.add_argument("--cmake_arg", action="append", default=[],
                        help="an extra configure argument, e.g. --cmake_arg=-DXLATE_CUDA=OFF")
    parser.add_argument("--only", default="", help="NAME[,NAME...]: these mutants only")
    parser.add_argument("--list", action="store_true", help="print the mutants and exit")
    parser.add_argument("--check", action="store_true",
                        help="check the snippets against the repository's working tree and HEAD"
                             " and exit (no scratch, no build)")
    parser.add_argument("--no_baseline", action="store_true",
                        help="skip running the tests on the unmutated build first")
    parser.add_argument("--test_timeout", type=int, default=900,
                        help="seconds per test command (default 900); a timeout counts as caught")
    parser.add_argument("--json_out", default=None, help="write the result table as JSON here")
    args = parser.parse_args()

    repo = os.path.realpath(args.repo)
    scratch = os.path.realpath(args.scratch or os.path.join(
        os.path.dirname(repo), os.path.basename(repo) + "-mutants"))
    args.data_dir = os.path.realpath(args.data_dir or os.path.join(repo, "..", "shared", "data"))
    if scratch == repo or scratch.startswith(repo + os.sep):
        print(f"--scratch {scratch} must be outside the repository", file=sys.stderr)
        return 2

    mutants = MUTANTS
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        known = {m.name for m in MUTANTS}
        unknown = [n for n in names if n not in known]
        if unknown:
            print(f"unknown mutants: {', '.join(unknown)} (--list names them)", file=sys.stderr)
            return 2
        mutants = [m for m in MUTANTS if m.name in names]
    if len({m.name for m in MUTANTS}) != len(MUTANTS):
        print("two mutants share a name", file=sys.stderr)
        return 2

    if args.list:
        list_mutants(mutants)
        return 0
    if args.check:
        def read_head(path):
            result = subprocess.run(["git", "show", f"HEAD:{path}"], cwd=repo,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            return result.stdout.decode("utf-8") if result.returncode == 0 else None
        status = 0
        for where, read in (("working tree", read_in(repo)), ("HEAD", read_head)):
            problems = snippet_problems(mutants, read)
            print(f"{where}: " + ("every snippet is there exactly once" if not problems
                                  else "\n  " + "\n  ".join(problems)))
            status = status or (1 if problems else 0)
        return status

    signal.signal(signal.SIGTERM, on_sigterm)
    run_started = time.time()
    try:
        commit = prepare_scratch(repo, scratch)
        lock_file = open(os.path.join(scratch, ".git", "mutants.lock"), "w")
        try:
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise Failure(f"another run_mutants.py is using {scratch}")
        log(f"scratch {scratch} at {commit[:12]}")
        problems = snippet_problems(mutants, read_in(scratch))
        if problems:
            raise Failure("the mutants are out of sync with the code at "
                          f"{commit[:12]}:\n  " + "\n  ".join(problems))
        logs = os.path.join(scratch, "build", "mutants-logs")
        os.makedirs(logs, exist_ok=True)
        configure_and_build(scratch, args, logs)
        if not args.no_baseline:
            baseline(scratch, mutants, args.test_timeout, logs)
        rows = []
        for i, mutant in enumerate(mutants, 1):
            log(f"[{i}/{len(mutants)}] {mutant.name}: {mutant.file}")
            row = try_mutant(scratch, mutant, args, logs)
            rows.append(row)
            log(f"    {row['result']} in {row['seconds']:.0f} s (build {row['build_seconds']:.0f}"
                f" s, tests {row['test_seconds']:.0f} s)")
    except Failure as failure:
        print(f"run_mutants: {failure}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Terminated):
        print("run_mutants: interrupted (no mutant is left applied)", file=sys.stderr)
        return 130

    total = time.time() - run_started
    print()
    print(f"commit {commit} (scratch {scratch}), {len(rows)} mutants, {total:.0f} s in all")
    print_table(rows)
    missed = [r["mutant"] for r in rows if not r["caught"]]
    print(f"\n{len(rows) - len(missed)}/{len(rows)} caught" +
          (f"; not caught: {', '.join(missed)}" if missed else ""))
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            json.dump({"commit": commit, "scratch": scratch, "total_seconds": round(total, 1),
                       "jobs": args.jobs, "cmake_args": args.cmake_arg, "mutants": rows},
                      f, indent=2)
            f.write("\n")
    return 0 if not missed else 1


if __name__ == "__main__":
    sys.exit(main())
