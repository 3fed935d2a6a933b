"""A short real training run, as CI can afford: a tiny Transformer on 3,000 Multi30k pairs for
600 steps. The training loss must fall well below its start, validation must run
(loss and BLEU through the engine), and the averaged checkpoints must translate; on a GPU, the
same in its default mixed precision (skipped without one)."""
import os
import shutil
import subprocess
import unittest

import trainer_harness as h


class ShortTrainingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.data = h.prepared_corpus("converge", 3000, 1000, valid_pairs=200)

    def train_and_translate(self, name, *device):
        """Trains 600 steps with `device`'s options (none: the CPU), checks that the loss falls,
        that validation runs and improves, and that the averaged checkpoints translate."""
        run = os.path.join(h.SCRATCH, name + "-run")
        shutil.rmtree(run, ignore_errors=True)
        h.train(self.data, run, "--max_steps", "600", "--max_tokens", "3000", "--warmup_steps",
                "100", "--checkpoint_every_steps", "100", "--keep_checkpoints", "3",
                "--validate_every_steps", "300", "--bleu_sentences", "40",
                "--bleu_beam_size", "2", "--log_every_steps", "10", *device)
        train = h.log_events(run, "train")
        first, last = train[0]["loss"], train[-1]["loss"]
        print(f"{name}: training loss {first:.3f} -> {last:.3f} over {train[-1]['step']} steps, "
              f"{train[-1]['tokens_per_second']:.0f} tokens/s")
        self.assertLess(last, 0.6 * first)
        valid = h.log_events(run, "valid")
        self.assertEqual([v["step"] for v in valid], [300, 600])
        self.assertLess(valid[-1]["loss"], valid[0]["loss"])
        self.assertIn("bleu", valid[-1])
        print(f"validation: {valid}")

        model = os.path.join(h.SCRATCH, name + "-model")
        h.run([h.TRAINER, "average", "--last", "3", "--output", model, run])
        with open(os.path.join(h.SCRATCH, "converge-text", "valid.en"), encoding="utf-8") as f:
            sentences = f.read().splitlines()[:20]
        result = subprocess.run([h.XLATE, "translate", "--model_dir", model],
                                input="\n".join(sentences) + "\n", capture_output=True,
                                text=True, timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr)
        outputs = result.stdout.splitlines()
        self.assertEqual(len(outputs), len(sentences))
        self.assertGreater(sum(1 for line in outputs if line.strip()), len(sentences) // 2)
        print("\n".join(f"{s}  =>  {t}" for s, t in list(zip(sentences, outputs))[:5]))
        return valid

    def test_loss_falls_and_the_averaged_model_translates(self):
        self.train_and_translate("converge")

    def test_on_a_gpu_it_converges_as_on_the_cpu(self):
        # The GPU's default precision (bf16 or fp16, activations in 16 bits): the same run, the
        # same checks, and validation BLEU (the engine's CUDA translator) does not fall.
        h.require_gpu(self, h.cuda_refusal(self.data,
                                           os.path.join(h.SCRATCH, "converge-gpu-probe")))
        valid = self.train_and_translate("converge-gpu", "--device", "cuda")
        self.assertGreaterEqual(valid[-1]["bleu"], valid[0]["bleu"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
