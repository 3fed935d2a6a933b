"""xlate-trainer as a user runs it: exact resume, data-parallel ranks, checkpoint retention,
averaging, and the errors for damaged checkpoints and bad options; on a machine with a GPU, the
same training there (TrainerGpuTest skips without one)."""
import os
import resource
import shutil
import subprocess
import unittest

import numpy as np

import trainer_harness as h

# A few optimizer steps of a tiny model on 300 Multi30k pairs; dropout on, so that the resume
# test also covers the dropout masks. Several micro-batches per step cross an epoch boundary.
COMMON = ["--max_tokens", "1500", "--update_freq", "2", "--warmup_steps", "4",
          "--validate_every_steps", "0", "--dropout", "0.1", "--activation_dropout", "0.1"]


class RunsOnTheCliCorpus(unittest.TestCase):
    """Tests that train on the shared 300-pair corpus, each class in a fresh folder of runs."""
    runs = None

    @classmethod
    def setUpClass(cls):
        cls.data = h.prepared_corpus("cli", 300, 500)
        cls.root = os.path.join(h.SCRATCH, cls.runs)
        shutil.rmtree(cls.root, ignore_errors=True)
        os.makedirs(cls.root)

    def run_dir(self, name):
        return os.path.join(self.root, name)


class TrainerCliTest(RunsOnTheCliCorpus):
    runs = "cli-runs"

    def test_resume_continues_bit_identically(self):
        straight, split = self.run_dir("straight"), self.run_dir("split")
        plans = {name: self.run_dir(name + ".plan") for name in ("straight", "split")}
        h.train(self.data, straight, "--max_steps", "10", "--checkpoint_every_steps", "5",
                "--batch_plan_out", plans["straight"], *COMMON)
        h.train(self.data, split, "--max_steps", "5", "--checkpoint_every_steps", "5",
                "--batch_plan_out", plans["split"], *COMMON)
        # A batch written by a step after the last checkpoint (a run killed before the next
        # one): the resumed run takes that batch again and must not list it twice.
        with open(plans["split"], "a", encoding="utf-8") as plan:
            plan.write("7 8 9\n")
        resumed = h.train(self.data, split, "--max_steps", "10", "--checkpoint_every_steps", "5",
                          "--batch_plan_out", plans["split"], *COMMON)
        self.assertIn("resumed from", resumed.stderr)
        # The plan: one line per micro-batch (10 steps x --update_freq 2), the same after the
        # resume; the first epoch's batches hold every usable pair once.
        with open(plans["straight"], encoding="utf-8") as plan:
            straight_plan = plan.read()
        with open(plans["split"], encoding="utf-8") as plan:
            self.assertEqual(straight_plan, plan.read())
        batches = [[int(i) for i in line.split()] for line in straight_plan.splitlines()]
        self.assertEqual(len(batches), 20)
        first_epoch = []
        for batch in batches:
            if set(batch) & set(first_epoch):
                break
            first_epoch += batch
        self.assertEqual(sorted(first_epoch), sorted({i for b in batches for i in b}))
        self.assertLess(len(first_epoch), sum(map(len, batches)), "one epoch should not hold all")
        self.assertTrue(all(0 <= i < 300 for i in first_epoch))
        epochs = [e["epoch"] for e in h.log_events(straight, "train")]
        self.assertGreater(max(epochs), 0, "the run should cross an epoch boundary")
        for name in ("model.safetensors", "optimizer.safetensors"):
            self.assertEqual(h.read_bytes(os.path.join(h.checkpoint_path(straight, 10), name)),
                             h.read_bytes(os.path.join(h.checkpoint_path(split, 10), name)),
                             f"{name} differs after resuming")
        # The loss of every step after the resume is the one of the straight run.
        straight_losses = [e["loss"] for e in h.log_events(straight, "train")]
        split_losses = [e["loss"] for e in h.log_events(split, "train")]
        self.assertEqual(straight_losses, split_losses)

    def test_two_ranks_equal_one_rank_with_the_whole_batch(self):
        if not h.MPIEXEC:
            self.fail("no mpiexec found by CMake: install openmpi-bin (scripts/setup.sh)")
        # A small learning rate keeps Adam's early, sign-like steps from magnifying the ranks'
        # different summation order beyond float tolerance.
        args = ["--max_steps", "3", "--checkpoint_every_steps", "1", "--max_tokens", "1500",
                "--warmup_steps", "4", "--lr_scale", "0.02", "--validate_every_steps", "0",
                "--dropout", "0", "--activation_dropout", "0"]
        launcher = [h.MPIEXEC, "-np", "2"] + [f for f in h.MPIEXEC_FLAGS if f]
        # The gradient all-reduced after the backward pass (0), in buckets smaller than one
        # tensor (0.01 MiB: 2,621 floats; the tiny model's matrices hold 4,096 and more), and in
        # the default 4 MiB buckets, each overlapped with the backward pass; with gradient
        # accumulation only the last micro-batch's backward pass reduces.
        for update_freq in ("1", "2"):
            single = self.run_dir(f"one-rank-{update_freq}")
            h.train(self.data, single, *args, "--update_freq", update_freq)
            a = h.weights(h.checkpoint_path(single, 3))
            first = h.weights(h.checkpoint_path(single, 1))
            unbucketed = None
            for bucket_mb in ("0", "0.01", "4"):
                with self.subTest(update_freq=update_freq, bucket_mb=bucket_mb):
                    ranks = self.run_dir(f"two-ranks-{update_freq}-{bucket_mb}")
                    h.train(self.data, ranks, *args, "--update_freq", update_freq,
                            "--bucket_mb", bucket_mb, launcher=launcher)
                    b = h.weights(h.checkpoint_path(ranks, 3))
                    moved = 0.0
                    for name in a:
                        # A key bias adds the same q·b to every score of a query, so softmax
                        # cancels it: its true gradient is 0 and Adam's normalisation turns
                        # rounding noise (which depends on the summation order, so on the
                        # ranks) into full-size steps. Nothing to compare.
                        if name.endswith("k_proj.bias"):
                            continue
                        np.testing.assert_allclose(a[name], b[name], rtol=1e-4, atol=2e-5,
                                                   err_msg=name)
                        moved = max(moved, float(np.abs(a[name] - first[name]).max()))
                    self.assertGreater(moved, 1e-3, "training should have changed the weights")
                    tokens = lambda run: [e["target_tokens"] for e in h.log_events(run, "train")]
                    self.assertEqual(tokens(single), tokens(ranks))
                    # Two ranks add the same two numbers for an element however the gradient
                    # is cut into buckets: the bucketed runs equal the unbucketed one exactly.
                    if unbucketed is None:
                        unbucketed = b
                    for name in a:
                        np.testing.assert_array_equal(unbucketed[name], b[name], err_msg=name)
                    steps = h.log_events(ranks, "train")
                    self.assertGreater(steps[-1]["reduce_seconds"], 0)
                    if bucket_mb == "0":
                        self.assertEqual(steps[-1]["reduce_seconds"],
                                         steps[-1]["exposed_reduce_seconds"])
                    else:
                        messages = [e["text"] for e in h.log_events(ranks, "message")]
                        self.assertTrue(any("overlapped with the backward pass" in m
                                            for m in messages), messages)

    def test_zero1_trains_the_unsharded_ranks_weights_and_moments_bit_for_bit(self):
        if not h.MPIEXEC:
            self.fail("no mpiexec found by CMake: install openmpi-bin (scripts/setup.sh)")
        # ZeRO-1: each rank reduce-scatters the gradient, updates its shard of every bucket and
        # gathers the others'. With two ranks an element's sum is the same two addends as in the
        # all-reduce, and Adam is elementwise, so the weights and the moments (gathered into the
        # checkpoint) must equal the unsharded run's exactly, whatever the buckets; and a sharded
        # run resumes exactly from a checkpoint (it takes its shard of the moments back).
        args = ["--checkpoint_every_steps", "2", "--validate_every_steps", "0", *COMMON,
                "--clip_norm", "0.5", "--lr_scale", "0.5"]
        launcher = [h.MPIEXEC, "-np", "2"] + [f for f in h.MPIEXEC_FLAGS if f]
        files = ("model.safetensors", "optimizer.safetensors")
        unsharded = self.run_dir("zero0")
        h.train(self.data, unsharded, "--max_steps", "4", "--bucket_mb", "0.01", *args,
                launcher=launcher)
        expected = {name: h.read_bytes(os.path.join(h.checkpoint_path(unsharded, 4), name))
                    for name in files}
        for bucket_mb in ("0", "0.01", "4"):
            with self.subTest(bucket_mb=bucket_mb):
                sharded = self.run_dir(f"zero1-{bucket_mb}")
                h.train(self.data, sharded, "--max_steps", "4", "--bucket_mb", bucket_mb,
                        "--zero_stage", "1", *args, launcher=launcher)
                for name in files:
                    got = h.read_bytes(os.path.join(h.checkpoint_path(sharded, 4), name))
                    self.assertTrue(got == expected[name], f"{name} differs from the unsharded run's")
                messages = [e["text"] for e in h.log_events(sharded, "message")]
                self.assertTrue(any("ZeRO-1" in m for m in messages), messages)
                # Each rank holds half the moments: rank 0's peak memory is logged.
                self.assertTrue(all(e["peak_host_memory_bytes"] > 0
                                    for e in h.log_events(sharded, "train")))
                norms = [e["grad_norm"] for e in h.log_events(sharded, "train")]
                unsharded_norms = [e["grad_norm"] for e in h.log_events(unsharded, "train")]
                np.testing.assert_allclose(norms, unsharded_norms, rtol=1e-6)
        split = self.run_dir("zero1-split")
        h.train(self.data, split, "--max_steps", "2", "--bucket_mb", "0.01", "--zero_stage", "1",
                *args, launcher=launcher)
        resumed = h.train(self.data, split, "--max_steps", "4", "--bucket_mb", "0.01",
                          "--zero_stage", "1", *args, launcher=launcher)
        self.assertIn("resumed from", resumed.stderr)
        for name in files:
            got = h.read_bytes(os.path.join(h.checkpoint_path(split, 4), name))
            self.assertTrue(got == expected[name], f"{name} differs after the sharded resume")

    def test_one_rank_told_to_reduce_trains_as_the_plain_run(self):
        # --gradient_reduction host makes one rank take the multi-rank path (the bucketed,
        # overlapped reduction or the one call after the backward pass) over a world of one, as
        # a single process and as an MPI singleton: the sum over one rank changes no bit.
        args = ["--max_steps", "3", "--checkpoint_every_steps", "3", *COMMON]
        plain = self.run_dir("reduce-none")
        h.train(self.data, plain, *args)
        files = ("model.safetensors", "optimizer.safetensors")
        expected = {name: h.read_bytes(os.path.join(h.checkpoint_path(plain, 3), name))
                    for name in files}
        launchers = [("process", ())]
        if h.MPIEXEC:
            launchers.append(("mpi", [h.MPIEXEC, "-np", "1"] + [f for f in h.MPIEXEC_FLAGS if f]))
        for launch, launcher in launchers:
            for bucket_mb in ("0", "0.01"):
                with self.subTest(launch=launch, bucket_mb=bucket_mb):
                    run = self.run_dir(f"reduce-host-{launch}-{bucket_mb}")
                    h.train(self.data, run, "--gradient_reduction", "host", "--bucket_mb",
                            bucket_mb, *args, launcher=launcher)
                    for name in files:
                        got = h.read_bytes(os.path.join(h.checkpoint_path(run, 3), name))
                        self.assertTrue(got == expected[name], f"{name} differs")
                    messages = [e["text"] for e in h.log_events(run, "message")]
                    self.assertEqual(any("buckets of at most" in m for m in messages),
                                     bucket_mb != "0", messages)
                    # The reduction really ran: its time is logged (zero without it).
                    if bucket_mb != "0":
                        self.assertTrue(any(e.get("reduce_seconds", 0) > 0
                                            for e in h.log_events(run, "train")))

    def test_ranks_started_differently_are_refused_at_start(self):
        if not h.MPIEXEC:
            self.fail("no mpiexec found by CMake: install openmpi-bin (scripts/setup.sh)")
        # Open MPI's MPMD form: rank 0 and rank 1 get their own command lines.
        base = [h.TRAINER, "train", "--data", self.data, "--preset", "tiny",
                "--bleu_sentences", "0", "--max_steps", "2", *COMMON]
        flags = [f for f in h.MPIEXEC_FLAGS if f]
        for name, different in (("bucket", ["--bucket_mb", "1"]), ("seed", ["--seed", "2"]),
                                ("model", ["--layers", "1"])):
            with self.subTest(name):
                run = self.run_dir(f"disagree-{name}")
                result = h.run([h.MPIEXEC, *flags, "-np", "1", *base, "--output", run, ":",
                                "-np", "1", *base, "--output", run, *different],
                               expect_ok=False, timeout=120)
                self.assertNotEqual(result.returncode, 0)
                self.assertIn("the ranks disagree on the model, the training data, the "
                              "training options and the device", result.stderr)
                self.assertIn("rank 1 differs from rank 0", result.stderr)
        # Ranks compare what they run: auto resolves to fp32 and float32 activations on a CPU,
        # so ranks that spell it out agree with one left at the defaults.
        run = self.run_dir("agree-resolved")
        h.run([h.MPIEXEC, *flags, "-np", "1", *base, "--output", run, ":", "-np", "1", *base,
               "--output", run, "--precision", "fp32", "--activations", "fp32"], timeout=120)
        self.assertEqual(h.log_events(run, "train")[-1]["step"], 2)

    def test_the_log_reports_update_ratios_activations_and_the_unigram_entropy(self):
        # What shows a stalled run at once (trainer/training/training_health.h), on every
        # report: the entropy is the corpus's, recounted here from the same text and vocabulary.
        import math
        from collections import Counter

        import sentencepiece
        run = self.run_dir("health")
        h.train(self.data, run, "--max_steps", "2", *COMMON)
        messages = [event["text"] for event in h.log_events(run, "message")]
        stated = [m for m in messages if m.startswith("the unigram entropy of the training")]
        self.assertEqual(len(stated), 1, messages)
        vocabulary = sentencepiece.SentencePieceProcessor(
            model_file=os.path.join(self.data, "spm.model"))
        counts = Counter()
        with open(os.path.join(h.SCRATCH, "cli-text", "train.de"), encoding="utf-8") as f:
            for line in f:
                counts.update(vocabulary.encode(line.rstrip("\n")))
                counts[vocabulary.eos_id()] += 1
        total = sum(counts.values())
        entropy = -sum(c / total * math.log(c / total) for c in counts.values())
        self.assertIn(f"is {entropy:.3f} nats per token", stated[0])
        for report in h.log_events(run, "train"):
            ratios, maxima = report["update_ratio"], report["activation_max"]
            self.assertIn("encoder.self_attn.q_proj", ratios)
            self.assertIn("shared", ratios)
            # Every group moves, by less than its own size (the logits' bias starts at zero, so
            # its ratio after an early step may exceed 1).
            self.assertTrue(all(0 < r < 1 for group, r in ratios.items()
                                if group != "final_logits_bias"), ratios)
            self.assertEqual(set(maxima), {"encoder.embedding", "encoder.layer.0",
                                           "encoder.output", "decoder.embedding",
                                           "decoder.layer.0", "decoder.output"})
            self.assertTrue(all(0 < m < 1e4 for m in maxima.values()), maxima)

    def test_keeps_the_last_checkpoints_and_averages_them(self):
        run = self.run_dir("average")
        h.train(self.data, run, "--max_steps", "4", "--checkpoint_every_steps", "1",
                "--keep_checkpoints", "3", *COMMON)
        kept = sorted(os.listdir(os.path.join(run, "checkpoints")))
        self.assertEqual(kept, ["step-00000002", "step-00000003", "step-00000004"])
        # The run's oneDNN primitives (one per new shape) and the host time they took.
        report = h.log_events(run, "train")[-1]
        self.assertGreater(report["plans_made"], 0)
        self.assertGreater(report["plan_seconds"], 0)
        model = os.path.join(self.root, "averaged")
        h.run([h.TRAINER, "average", "--last", "2", "--source_lang", "en", "--target_lang", "de",
               "--output", model, run])
        averaged = h.weights(model)
        with open(os.path.join(model, "config.json"), encoding="utf-8") as f:
            config = h.json.load(f)
        self.assertEqual((config["source_lang"], config["target_lang"]), ("en", "de"))
        w3, w4 = h.weights(h.checkpoint_path(run, 3)), h.weights(h.checkpoint_path(run, 4))
        for name in averaged:
            np.testing.assert_allclose(averaged[name], (w3[name] + w4[name]) / 2, rtol=1e-6,
                                       atol=1e-7, err_msg=name)
        sentences = "A man rides a bicycle.\nTwo dogs play in the snow.\n"
        result = h.subprocess.run([h.XLATE, "translate", "--model_dir", model, "--beam_size", "2"],
                                  input=sentences, capture_output=True, text=True, timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(len(result.stdout.splitlines()), 2)

    def test_init_from_starts_from_a_models_weights(self):
        source = self.run_dir("init-source")
        h.train(self.data, source, "--max_steps", "30", *COMMON)
        model = os.path.join(self.root, "init-model")
        h.run([h.TRAINER, "average", "--last", "1", "--output", model, source])
        started = self.run_dir("init-started")
        result = h.train(self.data, started, "--max_steps", "1", "--init_from", model, *COMMON)
        self.assertIn("starting from the weights of", result.stderr)
        # It starts where the model left off, not from random weights.
        first_loss = h.log_events(source, "train")[0]["loss"]
        last_loss = h.log_events(source, "train")[-1]["loss"]
        self.assertLess(last_loss, first_loss - 0.5)
        self.assertLess(h.log_events(started, "train")[0]["loss"], first_loss - 0.5)
        # Another architecture, or data of another vocabulary, is refused by name.
        other = h.train(self.data, self.run_dir("init-other"), "--max_steps", "1", "--layers",
                        "3", "--init_from", model, *COMMON, expect_ok=False)
        self.assertNotEqual(other.returncode, 0)
        self.assertIn("decoder_layers 2 there, 3 in this run", other.stderr)
        data = os.path.join(self.root, "init-data")
        shutil.copytree(self.data, data)
        with open(os.path.join(data, "spm.model"), "ab") as f:
            f.write(b"x")
        vocabulary = h.train(data, self.run_dir("init-vocabulary"), "--max_steps", "1",
                             "--init_from", model, *COMMON, expect_ok=False)
        self.assertNotEqual(vocabulary.returncode, 0)
        self.assertIn("its spm.model is not the data's", vocabulary.stderr)

    def test_damaged_and_mismatched_checkpoints_are_refused(self):
        run = self.run_dir("damaged")
        h.train(self.data, run, "--max_steps", "2", "--checkpoint_every_steps", "2", *COMMON)
        # A different architecture cannot resume this run.
        other = h.train(self.data, run, "--max_steps", "3", "--d_model", "32", *COMMON,
                        expect_ok=False)
        self.assertNotEqual(other.returncode, 0)
        self.assertIn("d_model", other.stderr)
        # Neither can a different batching.
        rebatched = h.train(self.data, run, "--max_steps", "3", *COMMON[:-8], "--max_tokens",
                            "1400", *COMMON[4:], expect_ok=False)
        self.assertNotEqual(rebatched.returncode, 0)
        self.assertIn("other batching", rebatched.stderr)
        # A partial checkpoint left by a killed write is ignored, not resumed from.
        os.makedirs(os.path.join(run, "checkpoints", ".step-00000003.partial"))
        # One flipped byte in the weights is detected.
        weights = os.path.join(h.checkpoint_path(run, 2), "model.safetensors")
        blob = bytearray(h.read_bytes(weights))
        blob[len(blob) // 2] ^= 0x40
        with open(weights, "wb") as f:
            f.write(blob)
        damaged = h.train(self.data, run, "--max_steps", "3", *COMMON, expect_ok=False)
        self.assertNotEqual(damaged.returncode, 0)
        self.assertIn("damaged", damaged.stderr)
        self.assertIn("step-00000002", damaged.stderr)

    def test_bad_options_and_inputs_get_clear_errors(self):
        cases = [
            (["--max_tokens", "0"], "--max_tokens"),
            (["--update_freq", "0"], "--update_freq"),
            (["--dropout", "1.5"], "dropout"),
            (["--preset", "huge"], "unknown preset"),
            (["--heads", "7"], "heads"),
            (["--positional", "rotary"], "--positional"),
            (["--norm_position", "middle"], '--norm_position is "middle"; it must be post or pre'),
            (["--plateau_warning_steps", "-1"], "plateau_warning_steps"),
            (["--bucket_mb", "-1"], "--bucket_mb is -1"),
            (["--zero_stage", "2"], "--zero_stage is 2; it must be 0 or 1"),
            (["--gradient_reduction", "gloo"],
             '--gradient_reduction is "gloo"; it must be auto, host or nccl'),
            (["--device", "cpu", "--gradient_reduction", "nccl"],
             "--gradient_reduction nccl reduces device memory and needs GPU ranks"),
            (["--device", "gpu"], '--device is "gpu"; it must be auto, cpu or cuda'),
            (["--loss_scale", "fp16"], '--loss_scale is "fp16"; it must be auto, none or dynamic'),
            (["--precision", "fp8"], '--precision is "fp8"; it must be auto, fp32, fp16 or bf16'),
            (["--activations", "fp8"], '--activations is "fp8"; it must be auto, fp32 or 16bit'),
            (["--device", "cpu", "--activations", "16bit"],
             "--activations 16bit needs --precision fp16 or bf16"),
            (["--loss_scale", "dynamic", "--initial_loss_scale", "100"],
             "--initial_loss_scale is 100; it must be a power of two"),
        ]
        for extra, expected in cases:
            result = h.train(self.data, self.run_dir("bad"), "--max_steps", "1", *extra,
                             expect_ok=False)
            self.assertNotEqual(result.returncode, 0, extra)
            self.assertIn(expected, result.stderr, extra)
        missing = h.train(os.path.join(self.root, "no-such-data"), self.run_dir("bad"),
                          expect_ok=False)
        self.assertNotEqual(missing.returncode, 0)
        self.assertIn("no-such-data", missing.stderr)
        blocked = os.path.join(self.root, "a-file")
        open(blocked, "w").close()
        unwritable = h.train(self.data, os.path.join(blocked, "run"), "--max_steps", "1",
                             expect_ok=False)
        self.assertNotEqual(unwritable.returncode, 0)
        self.assertIn("output directory", unwritable.stderr)
        # A plan file in a folder that does not exist, named in the error.
        no_plan = h.train(self.data, self.run_dir("bad"), "--max_steps", "1", "--batch_plan_out",
                          os.path.join(blocked, "plan.txt"), expect_ok=False)
        self.assertNotEqual(no_plan.returncode, 0)
        self.assertIn(os.path.join(blocked, "plan.txt"), no_plan.stderr)
        text = os.path.join(h.SCRATCH, "cli-text")
        uneven = os.path.join(self.root, "uneven.de")
        with open(uneven, "w", encoding="utf-8") as f:
            f.write("nur eine Zeile\n")
        mismatch = h.run([h.TRAINER, "prepare", "--train_source", os.path.join(text, "train.en"),
                          "--train_target", uneven, "--output", self.run_dir("bad-data")],
                         expect_ok=False)
        self.assertNotEqual(mismatch.returncode, 0)
        self.assertIn("uneven.de", mismatch.stderr)



# 2^127, the largest power of two a float holds: a backward pass started from it overflows (the
# logits bias gradient of a token in every sentence sums past float's range).
HUGE_SCALE = str(2.0 ** 127)


def check_overflow_skips_and_resumes_exactly(test, name, *device):
    """A backward pass started from HUGE_SCALE overflows: the step is skipped and the scale
    halved until it fits, skips do not count as steps, and 3 + resume + 3 steps equal 6 straight
    to the bit (the scale and the skipped steps are in the checkpoint). `device`: the trainer's
    device and precision options (none: the CPU)."""
    straight, split = test.run_dir(name + "-straight"), test.run_dir(name + "-split")
    args = ["--checkpoint_every_steps", "3", "--loss_scale", "dynamic",
            "--initial_loss_scale", HUGE_SCALE, "--loss_scale_window", "2", *device, *COMMON]

    def messages(run):
        return [e["text"] for e in h.log_events(run, "message")]

    h.train(test.data, straight, "--max_steps", "6", *args)
    h.train(test.data, split, "--max_steps", "3", *args)
    resumed = h.train(test.data, split, "--max_steps", "6", *args)
    test.assertIn("resumed from", resumed.stderr)
    skips = [m for m in messages(straight) if "step skipped" in m]
    test.assertGreater(len(skips), 0)
    test.assertTrue(skips[0].startswith(
        "step 1: the gradient is not finite at loss scale 1.70141e+38; step skipped, loss "
        "scale halved to 8.50706e+37"), skips[0])
    events = h.log_events(straight, "train")
    test.assertEqual([e["step"] for e in events], [1, 2, 3, 4, 5, 6])  # skips do not count
    test.assertEqual(sum(e["skipped_steps"] for e in events), len(skips))
    with open(os.path.join(h.checkpoint_path(straight, 6), "trainer_state.json")) as f:
        state = h.json.load(f)
    test.assertEqual(state["skipped_steps"], len(skips))
    test.assertEqual(state["loss_scale"], events[-1]["loss_scale"])
    for file in ("model.safetensors", "optimizer.safetensors", "trainer_state.json"):
        a = h.read_bytes(os.path.join(h.checkpoint_path(straight, 6), file))
        b = h.read_bytes(os.path.join(h.checkpoint_path(split, 6), file))
        if file == "trainer_state.json":  # the wall time differs
            a, b = (dict(h.json.loads(x), elapsed_seconds=0) for x in (a, b))
        test.assertEqual(a, b, f"{file} differs after resuming")
    test.assertEqual([e["loss"] for e in events],
                     [e["loss"] for e in h.log_events(split, "train")])


class LossScalingTest(RunsOnTheCliCorpus):
    runs = "loss-scale-runs"

    def messages(self, run):
        return [e["text"] for e in h.log_events(run, "message")]

    def test_dynamic_scaling_in_float32_gives_the_same_weights(self):
        # Powers of two scale and unscale exactly: only the scale's bookkeeping differs.
        plain, scaled = self.run_dir("plain"), self.run_dir("scaled")
        h.train(self.data, plain, "--max_steps", "4", "--checkpoint_every_steps", "4", *COMMON)
        h.train(self.data, scaled, "--max_steps", "4", "--checkpoint_every_steps", "4",
                "--loss_scale", "dynamic", "--loss_scale_window", "2", *COMMON)
        for name in ("model.safetensors", "optimizer.safetensors"):
            self.assertEqual(h.read_bytes(os.path.join(h.checkpoint_path(plain, 4), name)),
                             h.read_bytes(os.path.join(h.checkpoint_path(scaled, 4), name)), name)
        self.assertIn("step 2: 2 finite steps in a row; loss scale doubled to 256",
                      self.messages(scaled))
        self.assertIn("precision fp32, loss scaling dynamic", " ".join(self.messages(scaled)))
        self.assertIn("precision fp32, loss scaling none", " ".join(self.messages(plain)))
        self.assertEqual([e["loss_scale"] for e in h.log_events(scaled, "train")],
                         [128, 256, 256, 512])
        with open(os.path.join(h.checkpoint_path(scaled, 4), "trainer_state.json")) as f:
            state = h.json.load(f)
        self.assertEqual((state["loss_scale"], state["skipped_steps"]), (512, 0))
        with open(os.path.join(h.checkpoint_path(plain, 4), "trainer_state.json")) as f:
            self.assertNotIn("loss_scale", h.json.load(f))  # an unscaled run has no scaler

    def test_overflow_skips_the_step_halves_the_scale_and_resumes_exactly(self):
        check_overflow_skips_and_resumes_exactly(self, "overflow")

    def test_a_loss_that_is_not_finite_is_skipped_like_an_overflow(self):
        # A step of lr_scale 1e30 makes every later loss NaN: with loss scaling, each such step
        # is skipped and halves the scale (as an fp16 activation's overflow would), until the
        # scale falls below the minimum and the run stops naming the step.
        run = self.run_dir("loss-not-finite")
        result = h.train(self.data, run, "--max_steps", "4", "--lr_scale", "1e30",
                         "--loss_scale", "dynamic", "--min_loss_scale", "32", *COMMON,
                         expect_ok=False)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("step 2: the loss is not finite at loss scale 128; step skipped, loss "
                      "scale halved to 64", self.messages(run))
        self.assertIn("step 2: the loss is not finite at loss scale 64; step skipped, loss "
                      "scale halved to 32", self.messages(run))
        self.assertIn("the gradient of step 2 is not finite even at loss scale 32",
                      result.stderr)
        self.assertNotIn("the training loss is not finite", result.stderr)

    def test_a_scale_below_the_minimum_stops_the_run_naming_the_step(self):
        run = self.run_dir("diverged")
        result = h.train(self.data, run, "--max_steps", "2", "--loss_scale", "dynamic",
                         "--initial_loss_scale", HUGE_SCALE, "--min_loss_scale",
                         str(2.0 ** 126), *COMMON, expect_ok=False)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("the gradient of step 1 is not finite even at loss scale 8.50706e+37; "
                      "halving it would go below --min_loss_scale", result.stderr)
        self.assertFalse(os.path.exists(h.checkpoint_path(run, 1)))


# Whether --device cuda can train here, and the trainer's reason when it cannot.
class OutOfMemoryTest(unittest.TestCase):
    """A step that runs out of memory (host memory here, capped with RLIMIT_AS; on a GPU the
    caching allocator's std::bad_alloc takes the same path) ends the run with a message that
    names the cause and what to change, not std::terminate and a core dump; the checkpoint
    written before is kept, and the rerun with room resumes from it."""

    def test_a_step_out_of_memory_is_an_error_and_the_rerun_resumes(self):
        if "ASAN_OPTIONS" in os.environ or "TSAN_OPTIONS" in os.environ:
            self.skipTest("a sanitizer's shadow memory does not fit under an address-space cap")
        # 3,000 pairs in one micro-batch: about 1.4 GB at the step's peak, while setting up the
        # tiny model stays below 0.6 GB of address space.
        data = h.prepared_corpus("oom", 3000, 1000)
        output = os.path.join(h.SCRATCH, "oom-run")
        shutil.rmtree(output, ignore_errors=True)
        options = ("--max_tokens", "100000", "--checkpoint_every_steps", "1")
        h.train(data, output, "--max_steps", "1", *options)
        command = [h.TRAINER, "train", "--data", data, "--output", output, "--preset", "tiny",
                   "--log_every_steps", "1", "--bleu_sentences", "0", "--device", "cpu",
                   "--max_steps", "2", *options]
        cap = 1000 * 1024 * 1024

        def cap_address_space():
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

        failed = subprocess.run(command, capture_output=True, text=True, timeout=600,
                                env=dict(os.environ, OMP_NUM_THREADS="1"),
                                preexec_fn=cap_address_space)
        self.assertEqual(failed.returncode, 1, failed.stderr[-3000:])
        self.assertIn("xlate-trainer train: out of host memory: lower --max_tokens (100000 tokens "
                      "per micro-batch now) and raise --update_freq", failed.stderr)
        self.assertIn("a rerun resumes from the latest (1 of 2 steps done)", failed.stderr)
        resumed = h.train(data, output, "--max_steps", "2", *options)
        self.assertIn("resumed from", resumed.stderr)
        self.assertEqual([e["step"] for e in h.log_events(output, "train")], [1, 2])


DTYPE_NAMES = {"fp16": "float16", "bf16": "bfloat16"}


class TrainerGpuTest(RunsOnTheCliCorpus):
    runs = "gpu-runs"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.refusal = h.cuda_refusal(cls.data, os.path.join(cls.root, "probe"))

    def require_gpu(self):
        h.require_gpu(self, self.refusal)

    def test_without_a_gpu_cuda_is_refused_naming_the_reason(self):
        if self.refusal is None:
            self.skipTest("this machine has a GPU")
        self.assertIn("--device cuda: ", self.refusal)
        self.assertTrue(h.names_no_gpu(self.refusal), self.refusal)
        self.assertFalse(os.path.exists(os.path.join(self.run_dir("probe"), "checkpoints")))

    def test_gpu_resume_is_bit_identical_and_checkpoints_cross_devices(self):
        self.require_gpu()
        straight, split = self.run_dir("straight"), self.run_dir("split")
        cuda = ["--device", "cuda", "--precision", "fp32", "--checkpoint_every_steps", "5",
                *COMMON]
        # Validation (loss and BLEU through the engine's CUDA translator on the live weights)
        # changes nothing of the training.
        started = h.train(self.data, straight, "--max_steps", "10", *cuda,
                          "--validate_every_steps", "5", "--bleu_sentences", "8")
        self.assertIn("training on ", started.stderr)
        validations = h.log_events(straight, "valid")
        self.assertEqual([v["step"] for v in validations], [5, 10])
        self.assertTrue(all("bleu" in v and v["bleu_sentences"] == 8 for v in validations))
        h.train(self.data, split, "--max_steps", "5", *cuda)
        h.train(self.data, split, "--max_steps", "10", *cuda)
        for name in ("model.safetensors", "optimizer.safetensors"):
            self.assertEqual(h.read_bytes(os.path.join(h.checkpoint_path(straight, 10), name)),
                             h.read_bytes(os.path.join(h.checkpoint_path(split, 10), name)),
                             f"{name} differs after resuming on the GPU")
        gpu_steps = h.log_events(straight, "train")
        gpu_losses = [e["loss"] for e in gpu_steps]
        # Device memory: what the tensors needed at once, within what the allocator reserved.
        # The host's waits for the device: part of each logged interval (every step waits at
        # least for its loss and its gradient's norm).
        for e in gpu_steps:
            self.assertGreater(e["gpu_memory_peak_in_use_bytes"], 0)
            self.assertLessEqual(e["gpu_memory_peak_in_use_bytes"], e["gpu_memory_bytes"])
            self.assertGreater(e["device_wait_seconds"], 0)
            self.assertLessEqual(e["device_wait_seconds"], e["interval_seconds"])
        # The CPU trains the same model to the same losses (float32 rounding apart) ...
        cpu = self.run_dir("cpu")
        h.train(self.data, cpu, "--max_steps", "10", "--checkpoint_every_steps", "5", *COMMON)
        cpu_steps = h.log_events(cpu, "train")
        self.assertTrue(all("device_wait_seconds" not in e for e in cpu_steps))
        cpu_losses = [e["loss"] for e in cpu_steps]
        np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-3)
        # ... and resumes a GPU checkpoint (the files are the same format).
        crossed = self.run_dir("crossed")
        shutil.copytree(os.path.join(split, "checkpoints", "step-00000005"),
                        os.path.join(crossed, "checkpoints", "step-00000005"))
        resumed = h.train(self.data, crossed, "--max_steps", "10", "--checkpoint_every_steps",
                          "5", *COMMON)
        self.assertIn("resumed from", resumed.stderr)
        crossed_losses = [e["loss"] for e in h.log_events(crossed, "train")]
        np.testing.assert_allclose(crossed_losses, gpu_losses[5:], rtol=1e-3)

    def test_overflow_on_the_gpu_skips_the_step_halves_the_scale_and_resumes_exactly(self):
        # fp16 with its activations in float16 (the default): the scaled loss gradient overflows
        # in the device's first backward kernel, and the device's check of the summed gradient
        # finds it.
        self.require_gpu()
        check_overflow_skips_and_resumes_exactly(self, "gpu-overflow", "--device", "cuda",
                                                 "--precision", "fp16")

    def test_nccl_with_one_rank_trains_as_the_plain_gpu_run(self):
        # NCCL puts one rank on a GPU, so the trainer's NCCL path is checked here with one rank
        # (--gradient_reduction nccl reduces even then): bucketed and overlapped with the
        # backward pass, or one call after it, it must change no bit of fp32 training.
        self.require_gpu()
        args = ["--device", "cuda", "--precision", "fp32", "--max_steps", "4",
                "--checkpoint_every_steps", "4", *COMMON]
        plain = self.run_dir("nccl-none")
        h.train(self.data, plain, *args)
        files = ("model.safetensors", "optimizer.safetensors")
        expected = {name: h.read_bytes(os.path.join(h.checkpoint_path(plain, 4), name))
                    for name in files}
        for bucket_mb in ("0", "0.01", "4"):
            with self.subTest(bucket_mb=bucket_mb):
                run = self.run_dir(f"nccl-{bucket_mb}")
                result = h.train(self.data, run, "--gradient_reduction", "nccl", "--bucket_mb",
                                 bucket_mb, *args, expect_ok=False)
                if result.returncode != 0 and "libnccl" in result.stderr:
                    self.skipTest("no NCCL library on this machine: " + result.stderr.strip())
                self.assertEqual(result.returncode, 0, result.stderr)
                messages = [e["text"] for e in h.log_events(run, "message")]
                self.assertTrue(any("NCCL between the GPUs of the 1 ranks" in m
                                    for m in messages), messages)
                for name in files:
                    got = h.read_bytes(os.path.join(h.checkpoint_path(run, 4), name))
                    self.assertTrue(got == expected[name], f"{name} differs with NCCL")
        # ZeRO-1 on the GPU: reduce-scatter, Adam over the rank's shards (all of them with one
        # rank), the parameters and (for the checkpoint) the moments gathered in device memory.
        zero = self.run_dir("nccl-zero1")
        h.train(self.data, zero, "--gradient_reduction", "nccl", "--zero_stage", "1",
                "--bucket_mb", "0.01", *args)
        for name in files:
            got = h.read_bytes(os.path.join(h.checkpoint_path(zero, 4), name))
            self.assertTrue(got == expected[name], f"{name} differs with ZeRO-1 on the GPU")
        # --gradient_reduction host: the whole gradient through host memory, also unchanged;
        # ZeRO-1 needs NCCL there and is refused naming it.
        host = self.run_dir("nccl-host")
        h.train(self.data, host, "--gradient_reduction", "host", *args)
        for name in files:
            got = h.read_bytes(os.path.join(h.checkpoint_path(host, 4), name))
            self.assertTrue(got == expected[name], f"{name} differs through host memory")
        refused = h.train(self.data, self.run_dir("nccl-host-zero1"), "--gradient_reduction",
                          "host", "--zero_stage", "1", *args, expect_ok=False)
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("--zero_stage 1 on GPU ranks reduce-scatters and gathers in device memory "
                      "through NCCL, but --gradient_reduction is host", refused.stderr)

    def test_mixed_precision_trains_like_fp32(self):
        # fp16 and bf16 round the products' inputs; the losses stay near fp32's, fp16 scales its
        # loss, and a mixed-precision checkpoint resumes in fp32 on the CPU. With float32
        # activations first, then the default (--activations auto: stored in 16 bits).
        self.require_gpu()
        args = ["--device", "cuda", "--max_steps", "6", "--checkpoint_every_steps", "3", *COMMON]
        reference = self.run_dir("fp32")
        h.train(self.data, reference, "--precision", "fp32", *args)
        fp32_losses = [e["loss"] for e in h.log_events(reference, "train")]
        for precision, tolerance in (("fp16", 0.02), ("bf16", 0.05)):
            run = self.run_dir(precision)
            result = h.train(self.data, run, "--precision", precision, "--activations", "fp32",
                             *args, expect_ok=False)
            if result.returncode != 0 and "needs compute capability" in result.stderr:
                continue  # bf16 before Ampere: refused naming the capability
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn(f"precision {precision} (float32 weights, activations and gradients",
                          result.stderr)
            events = h.log_events(run, "train")
            self.assertEqual(len(events), 6)
            np.testing.assert_allclose([e["loss"] for e in events], fp32_losses, rtol=tolerance,
                                       err_msg=precision)
            self.assertEqual("loss_scale" in events[-1], precision == "fp16")
            resumed = h.train(self.data, run, "--device", "cpu", "--max_steps", "7",
                              "--checkpoint_every_steps", "3", *COMMON)
            self.assertIn("resumed from", resumed.stderr)
            # The default: activations stored in the precision's 16-bit type (twice the
            # rounding: looser).
            stored = self.run_dir(precision + "-16bit")
            result = h.train(self.data, stored, "--precision", precision, *args)
            self.assertIn("activations stored in " + DTYPE_NAMES[precision], result.stderr)
            np.testing.assert_allclose([e["loss"] for e in h.log_events(stored, "train")],
                                       fp32_losses, rtol=2 * tolerance,
                                       err_msg=precision + " 16bit")


if __name__ == "__main__":
    unittest.main(verbosity=2)
