"""xlate-trainer killed with SIGKILL at random moments (checkpoint writes included: it writes
one every step) and started again until it finishes: the final weights and optimizer state are
those of an uninterrupted run, bit for bit, and every checkpoint left on disk is whole.

Run by CTest; prints 'N passed, N failed' and exits non-zero on failure.
"""
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import unittest

import trainer_harness as h

STEPS = 24
# As test_trainer_cli's resume test: dropout on, several micro-batches a step, an epoch crossed.
ARGS = ["--max_steps", str(STEPS), "--checkpoint_every_steps", "1", "--keep_checkpoints", "3",
        "--max_tokens", "1500", "--update_freq", "2", "--warmup_steps", "4",
        "--validate_every_steps", "0", "--dropout", "0.1", "--activation_dropout", "0.1"]
KILLS = 8


def command(data, output, device=("--device", "cpu")):
    return [h.TRAINER, "train", "--data", data, "--output", output, "--preset", "tiny",
            "--log_every_steps", "1", "--bleu_sentences", "0", *device] + ARGS


class KilledTrainer(unittest.TestCase):
    def test_sigkill_at_random_then_resume_gives_the_uninterrupted_weights(self):
        data = h.prepared_corpus("killed", 300, 500)
        root = os.path.join(h.SCRATCH, "killed-runs")
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(root)
        straight, killed = os.path.join(root, "straight"), os.path.join(root, "killed")
        begin = time.monotonic()
        h.run(command(data, straight))
        straight_seconds = time.monotonic() - begin

        env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
        rng = random.Random(21)
        kills, finished = 0, False
        while not finished:
            process = subprocess.Popen(command(data, killed), env=env,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if kills < KILLS:
                # Anywhere in the first few steps of a run's life: start-up, a step, a
                # checkpoint write (each run gets a little further than the one before).
                time.sleep(rng.uniform(0.3, 4) * straight_seconds / STEPS)
                if process.poll() is None:
                    process.send_signal(signal.SIGKILL)
                    kills += 1
            _, stderr = process.communicate(timeout=600)
            if process.returncode == 0:
                finished = True
            elif process.returncode != -signal.SIGKILL:
                self.fail(f"a restart failed ({process.returncode}):\n{stderr.decode()[-3000:]}")
        self.assertGreaterEqual(kills, KILLS // 2, "the runs ended before they could be killed")

        final = h.checkpoint_path(killed, STEPS)
        for name in ("model.safetensors", "optimizer.safetensors"):
            self.assertEqual(h.read_bytes(os.path.join(h.checkpoint_path(straight, STEPS), name)),
                             h.read_bytes(os.path.join(final, name)),
                             f"{name} differs from the uninterrupted run's after {kills} kills")
        # What a kill leaves is never taken for a checkpoint: every step-* directory is whole
        # (the trainer writes into .partial directories and renames them when complete).
        checkpoints = os.path.join(killed, "checkpoints")
        for entry in os.listdir(checkpoints):
            if entry.startswith("step-"):
                files = set(os.listdir(os.path.join(checkpoints, entry)))
                self.assertTrue({"model.safetensors", "optimizer.safetensors", "config.json",
                                 "trainer_state.json"} <= files, f"{entry}: {sorted(files)}")
        print(f"{kills} kills; the uninterrupted run took {straight_seconds:.1f} s",
              file=sys.stderr)


def rank_process(launcher_pid, rank):
    """The pid of MPI rank `rank` among the launcher's children, or None."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/environ", "rb") as environ:
                variables = environ.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if parent == launcher_pid and f"OMPI_COMM_WORLD_RANK={rank}".encode() in variables:
            return int(entry)
    return None


class KilledRank(unittest.TestCase):
    """Data parallel: one rank killed mid-run ends the whole job within a bounded time (no rank
    left waiting in a collective), and the job started again resumes from the last complete
    checkpoint to the weights of an uninterrupted run."""

    def test_sigkill_of_one_rank_ends_the_job_and_the_rerun_resumes_exactly(self):
        self.kill_each_rank_then_resume("killed-rank-runs", ("--device", "cpu"))

    def test_sigkill_of_one_gpu_rank_ends_the_job_and_the_rerun_resumes_exactly(self):
        # Two GPU ranks share the one GPU a test machine has (--devices 0,0): NCCL refuses two
        # ranks on a GPU, so their gradient goes through host memory and MPI; a rank killed in
        # the middle of CUDA work must still end the job, and the rerun resume exactly.
        data = h.prepared_corpus("killed", 300, 500)
        refusal = h.cuda_refusal(data, os.path.join(h.SCRATCH, "killed-gpu-probe"))
        h.require_gpu(self, refusal)
        self.kill_each_rank_then_resume(
            "killed-gpu-rank-runs", ("--device", "cuda", "--precision", "fp32", "--devices",
                                     "0,0", "--gradient_reduction", "host"))

    def kill_each_rank_then_resume(self, runs, device):
        if not h.MPIEXEC:
            self.fail("no mpiexec found by CMake: install openmpi-bin (scripts/setup.sh)")
        launcher = [h.MPIEXEC, "-np", "2"] + [f for f in h.MPIEXEC_FLAGS if f]
        data = h.prepared_corpus("killed", 300, 500)
        root = os.path.join(h.SCRATCH, runs)
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(root)
        straight, killed = os.path.join(root, "straight"), os.path.join(root, "killed")
        h.run(launcher + command(data, straight, device))

        env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
        for victim in (1, 0):
            process = subprocess.Popen(launcher + command(data, killed, device), env=env,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            # Kill once the run has written a checkpoint of its own (the second run resumes
            # from the first's and goes on).
            deadline = time.monotonic() + 300
            done = set(os.listdir(os.path.join(killed, "checkpoints"))) \
                if os.path.isdir(os.path.join(killed, "checkpoints")) else set()
            pid = None
            while time.monotonic() < deadline and process.poll() is None:
                checkpoints = os.path.join(killed, "checkpoints")
                written = set(os.listdir(checkpoints)) if os.path.isdir(checkpoints) else set()
                if any(e.startswith("step-") for e in written - done):
                    pid = rank_process(process.pid, victim)
                    if pid is not None:
                        break
                time.sleep(0.02)
            self.assertIsNotNone(pid, f"rank {victim} was not found running")
            os.kill(pid, signal.SIGKILL)
            killed_at = time.monotonic()
            _, stderr = process.communicate(timeout=120)
            seconds = time.monotonic() - killed_at
            self.assertNotEqual(process.returncode, 0, stderr.decode()[-2000:])
            self.assertLess(seconds, 30, f"the job took {seconds:.1f} s to end after rank "
                                         f"{victim} was killed")
            print(f"rank {victim} killed: the job ended {seconds:.2f} s later", file=sys.stderr)

        resumed = h.run(launcher + command(data, killed, device))
        self.assertIn("resumed from", resumed.stderr)
        for name in ("model.safetensors", "optimizer.safetensors"):
            self.assertEqual(h.read_bytes(os.path.join(h.checkpoint_path(straight, STEPS), name)),
                             h.read_bytes(os.path.join(h.checkpoint_path(killed, STEPS), name)),
                             f"{name} differs from the uninterrupted two-rank run's")


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed, skipped = len(result.failures) + len(result.errors), len(result.skipped)
    # "0 passed, 0 failed, N skipped" is what CTest reads as a skip (SKIP_REGULAR_EXPRESSION).
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed or not result.wasSuccessful() else 0)
