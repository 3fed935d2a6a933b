#!/usr/bin/env python3
"""Training throughput of xlate-trainer against PyTorch (CPU or GPU) on the same architecture, the
same data and the same token budget per step, one after the other in the same run.

Both train the paper's model (default: base, 6+6 layers, d_model 512) on Multi30k English-German
with one shared SentencePiece vocabulary (the one `xlate-trainer prepare` trains, given to
PyTorch too), batches of length-grouped pairs up to --max_tokens padded source+target tokens,
Adam and the paper's schedule, label smoothing 0.1, dropout 0.1. Throughput counts real
(non-pad) source + target tokens per second over the timed steps, after untimed warm-up steps.

  python3 bench/compare_pytorch_training.py --trainer build/cli/xlate-trainer \
      --threads 2 --max_tokens 4000 --steps 8 --warmup 2
  python3 bench/compare_pytorch_training.py --device cuda --max_tokens 50000 --steps 20 \
      --torch_precisions fp32,fp16,bf16 --torch_compile fp32,bf16
On a GPU xlate trains once per --xlate_precisions entry (fp32 with TF32 off; fp16/bf16:
float32 storage, tensor-core products, xlate-trainer --precision); PyTorch runs once per
--torch_precisions entry (fp32 with TF32 off; fp16/bf16 through torch.autocast), and once more
compiled (torch.compile with dynamic shapes: every batch has other shapes) per --torch_compile
entry. The ratios printed are xlate against PyTorch's eager run in the same precision, and
against the compiled run where there is one; a compiled run's warmup_seconds is its compilation
and warm-up steps. GPU memory: the
trainer's allocator high-water mark, torch.cuda.max_memory_allocated() for PyTorch.
PyTorch is not installed by scripts/setup.sh: `python3 -m pip install torch` first.

Both train on the same batches: xlate's first run writes the batches it takes
(xlate-trainer train --batch_plan_out) and every PyTorch run reads them (--plan_in), so the
real tokens a step holds and the padding around them are the same on both sides. The corpus is
prepared without the length filters, so that its pair i is line i of the text PyTorch reads
(the benchmark stops if prepare dropped a pair).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def prepare(args):
    data = os.path.join(args.workdir, "data")
    if not os.path.exists(os.path.join(data, "corpus.json")):
        multi30k = os.path.join(args.data_dir, "multi30k")
        # The filters off, as bench/gpu/make_bundle.sh prepares the GPU bundle's copy.
        subprocess.run([args.trainer, "prepare",
                        "--train_source", os.path.join(multi30k, "train.en.gz"),
                        "--train_target", os.path.join(multi30k, "train.de.gz"),
                        "--output", data, "--vocab_size", str(args.vocab_size),
                        "--max_length", "100000", "--max_length_ratio", "0"], check=True)
    with open(os.path.join(data, "corpus.json"), encoding="utf-8") as f:
        train = json.load(f)["splits"]["train"]
    dropped = {k: v for k, v in train.items() if k.startswith("dropped_") and v}
    if dropped:
        sys.exit(f"prepare dropped pairs ({dropped}): the batch plan's pair numbers would not "
                 f"be the text's line numbers; delete {data} and check the input")
    return data


def plan_path(args):
    """The batches of xlate's first run, which every PyTorch run takes too."""
    return os.path.join(args.workdir, "batch_plan.txt")


def train_timed_steps(args, data, name, launcher=(), threads=None, extra=(), quiet=False):
    """Runs xlate-trainer for args.warmup + args.steps steps (under `launcher` when given) and
    returns its logged train events after the warm-up, and the seconds they took."""
    run = os.path.join(args.workdir, name)
    shutil.rmtree(run, ignore_errors=True)
    environment = dict(os.environ, OMP_NUM_THREADS=str(threads or args.threads))
    subprocess.run(list(launcher) + [
        args.trainer, "train", "--data", data, "--output", run, "--preset", args.preset,
        "--max_tokens", str(args.max_tokens), "--max_steps", str(args.warmup + args.steps),
        "--log_every_steps", "1", "--validate_every_steps", "0", "--checkpoint_every_steps", "0",
        "--bleu_sentences", "0", "--device", args.device] + list(extra), check=True, env=environment,
        stdout=subprocess.DEVNULL if quiet else None, stderr=subprocess.DEVNULL if quiet else None)
    with open(os.path.join(run, "train_log.jsonl"), encoding="utf-8") as log:
        steps = [e for e in map(json.loads, log) if e["event"] == "train"]
    shutil.rmtree(run, ignore_errors=True)  # a base checkpoint is ~0.6 GB
    timed = [e for e in steps if e["step"] > args.warmup]
    return timed, timed[-1]["elapsed_seconds"] - steps[args.warmup - 1]["elapsed_seconds"]


def add_training_arguments(parser, threads=2, steps=8):
    """The options every training benchmark shares: trainer, data, model and batch, step counts."""
    parser.add_argument("--trainer", default=os.path.join(REPO, "build", "cli", "xlate-trainer"))
    parser.add_argument("--data_dir", default=os.path.join(REPO, "..", "shared", "data"))
    parser.add_argument("--workdir", default="/tmp/xlate-train-bench")
    parser.add_argument("--preset", default="base")
    parser.add_argument("--vocab_size", type=int, default=8000)
    parser.add_argument("--max_tokens", type=int, default=4000)
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=threads)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")


def run_xlate(args, data, precision="fp32", write_plan=False):
    """precision: fp32, fp16 or bf16, or fp16:16bit / bf16:16bit for --activations 16bit (its
    result then has "activations": "16bit"). write_plan: write the batches taken (plan_path)."""
    precision, _, activations = precision.partition(":")
    plan = ("--batch_plan_out", plan_path(args)) if write_plan else ()
    timed, seconds = train_timed_steps(
        args, data, "xlate-run",
        extra=("--precision", precision, "--activations", activations or "fp32") + plan)
    tokens = sum(e["source_tokens"] + e["target_tokens"] for e in timed)
    return {"system": "xlate", "device": args.device, "precision": precision,
            "activations": activations or "fp32",
            "threads": args.threads, "steps": len(timed), "tokens": tokens,
            "seconds": seconds, "tokens_per_second": tokens / seconds,
            "seconds_per_step": seconds / len(timed), "final_loss": timed[-1]["loss"],
            # What the tensors needed at once (as torch.cuda.max_memory_allocated), and what the
            # caching allocator held from the device (as torch.cuda.max_memory_reserved).
            "peak_memory_bytes": max((e.get("gpu_memory_peak_in_use_bytes", 0) for e in timed),
                                     default=0) or None,
            "reserved_memory_bytes": max((e.get("gpu_memory_bytes", 0) for e in timed), default=0)
                                     or None,
            # The share of the time the host waited for the GPU: near 0, the host bounds the step
            # (launching kernels, planning products, batching), not the GPU.
            "host_wait_share": (sum(e["device_wait_seconds"] for e in timed) /
                                sum(e["interval_seconds"] for e in timed))
                               if all("device_wait_seconds" in e for e in timed) else None,
            # Per-shape plans (cuBLASLt's, oneDNN's) made per timed step and the host seconds
            # they took: a new batch shape plans its products anew.
            "plans_per_step": sum(e.get("plans_made", 0) for e in timed) / len(timed),
            "plan_seconds_per_step": sum(e.get("plan_seconds", 0) for e in timed) / len(timed)}


def run_pytorch(args, data, precision="fp32", compiled=False):
    multi30k = os.path.join(args.data_dir, "multi30k")
    result = subprocess.run([sys.executable, os.path.join(REPO, "bench", "pytorch_transformer_train.py"),
                             "--spm", os.path.join(data, "spm.model"),
                             "--source", os.path.join(multi30k, "train.en.gz"),
                             "--target", os.path.join(multi30k, "train.de.gz"),
                             "--preset", args.preset, "--max_tokens", str(args.max_tokens),
                             "--steps", str(args.steps), "--warmup_steps", str(args.warmup),
                             "--threads", str(args.threads), "--device", args.device,
                             "--precision", precision, "--plan_in", plan_path(args)] +
                            (["--compile"] if compiled else []),
                            check=True, stdout=subprocess.PIPE, text=True)  # stderr: shown
    report = json.loads(result.stdout.strip().splitlines()[-1])
    report["tokens"] = report["source_tokens"] + report["target_tokens"]
    if compiled:
        report["system"] = "pytorch-compiled"
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_training_arguments(parser)
    parser.add_argument("--torch_precisions", default="fp32",
                        help="comma-separated PyTorch runs: fp32, fp16 (GPU only), bf16")
    parser.add_argument("--xlate_precisions", default="fp32",
                        help="comma-separated xlate-trainer --precision runs (GPU for fp16; "
                             "fp16:16bit and bf16:16bit add --activations 16bit)")
    parser.add_argument("--torch_compile", default="",
                        help="comma-separated precisions to also run PyTorch under torch.compile "
                             "in (each compiles for a minute or more on a GPU)")
    args = parser.parse_args()
    precisions = args.torch_precisions.split(",")
    if "fp32" not in precisions or any(p not in ("fp32", "fp16", "bf16") for p in precisions):
        parser.error("--torch_precisions lists fp32, fp16 or bf16 and must include fp32")
    compiled = [p for p in args.torch_compile.split(",") if p]
    if any(p not in ("fp32", "fp16", "bf16") for p in compiled):
        parser.error(f"--torch_compile lists fp32, fp16 or bf16, not {args.torch_compile!r}")
    try:
        import torch  # noqa: F401
    except ImportError:
        sys.exit("PyTorch is needed for this benchmark: python3 -m pip install torch")
    os.makedirs(args.workdir, exist_ok=True)
    data = prepare(args)
    started = time.time()
    xlate_precisions = args.xlate_precisions.split(",")
    if "fp32" not in xlate_precisions:
        parser.error("--xlate_precisions must include fp32")
    if any(p.partition(":")[0] not in ("fp32", "fp16", "bf16") or
           p.partition(":")[2] not in ("", "16bit") for p in xlate_precisions):
        parser.error("--xlate_precisions lists fp32, fp16, bf16, fp16:16bit or bf16:16bit")
    results = []
    for precision in xlate_precisions:
        try:
            results.append(run_xlate(args, data, precision, write_plan=not results))
        except subprocess.CalledProcessError as error:
            if not precision.endswith(":16bit"):
                raise
            # Not yet run on a GPU when written: its failure must not cost the other numbers.
            print(f"xlate {precision} failed (exit {error.returncode}); left out",
                  file=sys.stderr)
    results += [run_pytorch(args, data, precision) for precision in precisions]
    results += [run_pytorch(args, data, precision, compiled=True) for precision in compiled]
    for r in results:
        memory = (f"  {r['peak_memory_bytes'] / 2**30:.2f} GiB GPU in use"
                  if r.get("peak_memory_bytes") else "")
        if r.get("reserved_memory_bytes"):
            memory += f", {r['reserved_memory_bytes'] / 2**30:.2f} GiB reserved"
        if r.get("host_wait_share") is not None:
            memory += f", host waited for the GPU {100 * r['host_wait_share']:.0f}% of the time"
        if r.get("plans_per_step") is not None:
            memory += (f", {r['plans_per_step']:.0f} plans/step made in "
                       f"{1000 * r['plan_seconds_per_step']:.1f} ms")
        if r.get("compiled"):
            memory += f", {r['warmup_seconds']:.0f} s to compile and warm up"
        label = r.get("precision", "fp32") + (":16bit" if r.get("activations") == "16bit" else "")
        print(f"{r['system']:17s} {label:10s} {r['tokens_per_second']:9.1f} tok/s"
              f"  {r['seconds_per_step']:7.3f} s/step  {r['steps']} steps, {r['tokens']} tokens"
              f"{memory}")
    def find(system, precision, activations="fp32"):
        return next((r for r in results if r["system"] == system and r["precision"] == precision
                     and r.get("activations", "fp32") == activations), None)
    eager_fp32 = find("pytorch", "fp32")
    if eager_fp32["tokens"] != find("xlate", "fp32")["tokens"]:
        sys.exit(f"xlate counted {find('xlate', 'fp32')['tokens']} real tokens and PyTorch "
                 f"{eager_fp32['tokens']} on what should be the same batches: the plan's pair "
                 "numbers do not match PyTorch's lines")
    ratio = find("xlate", "fp32")["tokens_per_second"] / eager_fp32["tokens_per_second"]
    for entry in xlate_precisions[1:]:
        precision, _, activations = entry.partition(":")
        if find("pytorch", precision):  # the same precision on both sides (torch.autocast)
            xlate = find("xlate", precision, activations or "fp32")
            print(f"xlate{' (16-bit activations)' if activations else ''} / pytorch "
                  f"({precision} eager) = "
                  f"{xlate['tokens_per_second'] / find('pytorch', precision)['tokens_per_second']:.3f}")
    for precision in compiled:
        for activations in ("fp32", "16bit"):
            xlate = find("xlate", precision, activations)
            if xlate:
                print(f"xlate{' (16-bit activations)' if activations == '16bit' else ''} / "
                      f"pytorch ({precision} torch.compile) = "
                      f"{xlate['tokens_per_second'] / find('pytorch-compiled', precision)['tokens_per_second']:.3f}")
    print(f"the batches (the same on both sides) hold {eager_fp32['tokens']:,} real tokens in "
          f"{eager_fp32['padded_tokens']:,} padded ones "
          f"({eager_fp32['tokens'] / eager_fp32['padded_tokens']:.3f} real per padded)")
    print(f"xlate / pytorch (fp32 eager) = {ratio:.3f}   (preset {args.preset}, {args.device}, "
          f"{args.max_tokens} tokens/step, {args.threads} threads, {time.time() - started:.0f} s)")
    print(json.dumps({"results": results, "ratio": ratio}))


if __name__ == "__main__":
    main()
