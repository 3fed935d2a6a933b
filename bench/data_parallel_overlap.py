#!/usr/bin/env python3
"""What overlapping the gradient all-reduce with the backward pass buys data-parallel training:
xlate-trainer under `mpirun -np R` with the gradient reduced in one call after the backward pass
(--bucket_mb 0) and in buckets of several sizes overlapped with it, next to one process with the
whole batch, alternating in the same run; with --zero_stages 0,1 each bucketed configuration
also runs with Adam's moments sharded over the ranks (ZeRO-1).

Every run trains the same model (default: the paper's base) on Multi30k with the same global
batch (--max_tokens padded source+target tokens per step, shared by the ranks). Reported per
configuration, over the timed steps after untimed warm-up steps: real source+target tokens/s,
seconds per step, and from the trainer's log (rank 0) the seconds per step spent in all-reduce
calls and the part of them the step waited for (exposed); hidden = 1 - exposed / all-reduce;
and rank 0's peak resident memory. With ZeRO-1 the all-gather of the updated parameters after
the step counts as reduction time, all of it exposed.

  python3 bench/data_parallel_overlap.py --ranks 2 --threads_per_rank 1 --steps 6

On one GPU (NCCL puts one rank per GPU): --device cuda --ranks 1 --gradient_reduction nccl
times the trainer's NCCL path with one rank. Its all-reduce is then a copy within the GPU, so
what the exposed time measures is the overlap machinery's own cost (events, the reduction
thread, per-bucket calls), not a network's.
"""
import argparse
import json
import os
import shutil
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench"))
from compare_pytorch_training import add_training_arguments, prepare, train_timed_steps  # noqa: E402

MPI_FLAGS = ["--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
             "--mca", "btl", "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none"]


def run(args, data, name, launcher, threads, extra):
    timed, seconds = train_timed_steps(args, data, "run-" + name, launcher, threads, extra,
                                       quiet=True)
    tokens = sum(e["source_tokens"] + e["target_tokens"] for e in timed)
    reduce = sum(e.get("reduce_seconds", 0) for e in timed) / len(timed)
    exposed = sum(e.get("exposed_reduce_seconds", 0) for e in timed) / len(timed)
    return {"name": name, "tokens_per_second": tokens / seconds,
            "seconds_per_step": seconds / len(timed), "reduce_seconds_per_step": reduce,
            "exposed_seconds_per_step": exposed, "final_loss": timed[-1]["loss"],
            "peak_host_memory_mb": max(e.get("peak_host_memory_bytes", 0) for e in timed) / 2**20}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    # --threads: of the one process with the whole batch (default: ranks x threads_per_rank).
    add_training_arguments(parser, threads=None, steps=6)
    parser.add_argument("--mpirun", default=shutil.which("mpirun") or "mpirun")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--threads_per_rank", type=int, default=1)
    parser.add_argument("--bucket_mb", default="0,1,4,25", help="comma-separated; 0 = no overlap")
    parser.add_argument("--zero_stages", default="0", help="comma-separated: 0, 1 or 0,1")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--gradient_reduction", default="auto", choices=["auto", "host", "nccl"],
                        help="the ranks' xlate-trainer --gradient_reduction")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    data = prepare(args)
    launcher = [args.mpirun, "-np", str(args.ranks)] + MPI_FLAGS
    configurations = [("1 process", [], args.threads or args.ranks * args.threads_per_rank, [])]
    for bucket in args.bucket_mb.split(","):
        for zero in args.zero_stages.split(","):
            configurations.append((f"{args.ranks} ranks, bucket {bucket} MiB"
                                   + (", ZeRO-1" if zero == "1" else ""), launcher,
                                   args.threads_per_rank,
                                   ["--bucket_mb", bucket, "--zero_stage", zero,
                                    "--gradient_reduction", args.gradient_reduction]))
    started = time.time()
    results = {name: [] for name, _, _, _ in configurations}
    for _ in range(args.rounds):
        for name, run_launcher, threads, extra in configurations:
            results[name].append(run(args, data, name.replace(" ", "_").replace(",", ""),
                                     run_launcher, threads, extra))
    summary = []
    for name, runs in results.items():
        mean = {key: sum(r[key] for r in runs) / len(runs)
                for key in ("tokens_per_second", "seconds_per_step", "reduce_seconds_per_step",
                            "exposed_seconds_per_step", "peak_host_memory_mb")}
        mean["name"] = name
        hidden = (1 - mean["exposed_seconds_per_step"] / mean["reduce_seconds_per_step"]
                  if mean["reduce_seconds_per_step"] > 0 else None)
        mean["hidden_fraction"] = hidden
        summary.append(mean)
        print(f"{name:36s} {mean['tokens_per_second']:8.1f} tok/s  {mean['seconds_per_step']:6.2f} s/step"
              f"  all-reduce {mean['reduce_seconds_per_step']:6.3f} s/step"
              f"  exposed {mean['exposed_seconds_per_step']:6.3f}"
              + (f"  hidden {hidden:5.1%}" if hidden is not None else "")
              + f"  peak RSS rank 0 {mean['peak_host_memory_mb']:7.0f} MB")
    print(f"(preset {args.preset}, {args.max_tokens} tokens/step, {args.ranks} ranks x "
          f"{args.threads_per_rank} threads, {args.rounds} rounds, {time.time() - started:.0f} s)")
    print(json.dumps({"summary": summary}))


if __name__ == "__main__":
    main()
