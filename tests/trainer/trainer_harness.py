"""Shared set-up of the trainer's process tests: paths from CTest's environment, one prepared
Multi30k corpus (first pairs of the training set, a small vocabulary) reused by every test,
and small helpers to run xlate-trainer and read its outputs."""
import gzip
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ["XLATE_REPO"], "tests", "reference"))
from transformer_reference import read_safetensors  # noqa: E402

TRAINER = os.environ["XLATE_TRAINER_BIN"]
XLATE = os.environ["XLATE_BIN"]
DATA = os.environ["XLATE_DATA_DIR"]
SCRATCH = os.environ["XLATE_TRAINER_SCRATCH"]
MPIEXEC = os.environ.get("XLATE_MPIEXEC", "")
MPIEXEC_FLAGS = os.environ.get("XLATE_MPIEXEC_FLAGS", "").split(";")


def write_head(source_gz, destination, count):
    with gzip.open(source_gz, "rt", encoding="utf-8") as src, \
            open(destination, "w", encoding="utf-8") as out:
        for index, line in enumerate(src):
            if index >= count:
                break
            out.write(line)


def prepared_corpus(name, pairs, vocab_size, valid_pairs=100):
    """A data directory for the first `pairs` Multi30k pairs, made once per name."""
    directory = os.path.join(SCRATCH, name)
    if os.path.exists(os.path.join(directory, "corpus.json")):
        return directory
    text = os.path.join(SCRATCH, name + "-text")
    os.makedirs(text, exist_ok=True)
    files = {}
    for split, source, count in (("train", "train", pairs), ("valid", "val", valid_pairs)):
        for lang in ("en", "de"):
            files[split, lang] = os.path.join(text, f"{split}.{lang}")
            write_head(os.path.join(DATA, "multi30k", f"{source}.{lang}.gz"), files[split, lang],
                       count)
    run([TRAINER, "prepare", "--train_source", files["train", "en"],
         "--train_target", files["train", "de"], "--valid_source", files["valid", "en"],
         "--valid_target", files["valid", "de"], "--output", directory,
         "--vocab_size", str(vocab_size)])
    return directory


def run(command, expect_ok=True, env=None, timeout=900):
    merged = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    if MPIEXEC and command[0] == MPIEXEC and "ASAN_OPTIONS" in merged:
        # Under AddressSanitizer (tests/sanitize/run_sanitized_units.sh), ranks launched by
        # mpiexec do not check leaks: Open MPI unloads its components at MPI_Finalize, so their
        # own leaks reach LeakSanitizer from unknown modules that no suppression can name. The
        # trainer's leaks are checked by the single-process runs; every other check stays on.
        merged["ASAN_OPTIONS"] += ":detect_leaks=0"
    merged.update(env or {})
    result = subprocess.run(command, capture_output=True, text=True, env=merged, timeout=timeout)
    if expect_ok and result.returncode != 0:
        raise AssertionError(f"{command} failed ({result.returncode}):\n{result.stderr[-4000:]}")
    return result


def train(data, output, *extra, expect_ok=True, launcher=()):
    """A tiny-model run on the CPU (the reference); "--device", "cuda" in `extra` moves it."""
    command = list(launcher) + [TRAINER, "train", "--data", data, "--output", output,
                                "--preset", "tiny", "--log_every_steps", "1",
                                "--bleu_sentences", "0", "--device", "cpu"] + list(extra)
    return run(command, expect_ok=expect_ok)


def cuda_refusal(data, output):
    """None when a one-step run trains on the GPU here, else the trainer's refusal."""
    result = train(data, output, "--max_steps", "1", "--device", "cuda", expect_ok=False)
    return None if result.returncode == 0 else result.stderr


def names_no_gpu(refusal):
    """Whether cuda_refusal's text says there is no GPU (or no CUDA in the build)."""
    return "no CUDA device is visible" in refusal or "no CUDA backend" in refusal


def require_gpu(test, refusal):
    """Skips `test` on a machine without a GPU (refusal from cuda_refusal); fails it when the
    probe step failed on a GPU, which is the GPU path failing, not a reason to skip, and when
    XLATE_EXPECT_GPU is set (the GPU bundle sets it): there no GPU is a fault."""
    if refusal is None:
        return
    if not names_no_gpu(refusal):
        test.fail("one training step with --device cuda failed:\n" + refusal[-4000:])
    if os.environ.get("XLATE_EXPECT_GPU", "0") not in ("", "0"):
        test.fail("XLATE_EXPECT_GPU is set, but: " + refusal.strip())
    test.skipTest("no GPU: " + refusal.strip())


def log_events(run_directory, event):
    with open(os.path.join(run_directory, "train_log.jsonl"), encoding="utf-8") as log:
        return [entry for entry in map(json.loads, log) if entry["event"] == event]


def checkpoint_path(run_directory, step):
    return os.path.join(run_directory, "checkpoints", f"step-{step:08d}")


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def weights(model_directory):
    return read_safetensors(os.path.join(model_directory, "model.safetensors"))
