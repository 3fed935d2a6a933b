#!/usr/bin/env python3
"""Device time per step, split by kernel, from an Nsight Compute CSV
(ncu --metrics gpu__time_duration.sum --csv PROGRAM ...): a decoding plan's run, or a few
training steps.

    python3 bench/gpu/kernel_table.py KERNELS.csv --plan PLAN.tsv   # decoding
    python3 bench/gpu/kernel_table.py KERNELS.csv --steps 3          # xlate-trainer, 3 steps

Decoding steps = the plan's per-batch decode lengths summed over batches (every step of a batch
runs the decoder once); encoder kernels are included, spread over the steps like the rest.
Training steps are the --max_steps the trainer ran; every kernel of the run (the first step's
too) is spread over them. Kernels are grouped by name up to the first "(" (cuBLASLt's by their
own names), the longest first."""

import argparse
import collections
import csv
import re
import sys

UNIT_TO_MICROSECONDS = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3,
                        "msecond": 1e3}


def decoding_steps(plan_path):
    lengths = {}
    with open(plan_path, encoding="utf-8") as f:
        for line in f:
            batch, length = line.split("\t")[:2]
            lengths[batch] = int(length)
    return sum(lengths.values())


def short_name(kernel):
    """A kernel's name without return type, namespaces and parameters, its template arguments
    kept (they name the element type): ncu prints the bare function name by default and the
    whole demangled signature with --print-kernel-base demangled."""
    name = re.sub(r"\(anonymous namespace\)::", "", kernel.strip())
    name = re.sub(r"^void\s+", "", name)
    name = name.split("(")[0]
    head, bracket, arguments = name.partition("<")
    return (head.split("::")[-1] + bracket + arguments)[:70]


def kernel_times(csv_path):
    """(microseconds, launches) per kernel name."""
    total = collections.defaultdict(float)
    count = collections.Counter()
    with open(csv_path, encoding="utf-8", errors="replace") as f:
        rows = [line for line in f if line.startswith('"')]
    for row in csv.DictReader(rows):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        unit = row["Metric Unit"]
        if unit not in UNIT_TO_MICROSECONDS:
            sys.exit(f"{csv_path}: unknown time unit {unit!r} (expected one of "
                     f"{', '.join(UNIT_TO_MICROSECONDS)})")
        name = short_name(row["Kernel Name"])
        total[name] += float(row["Metric Value"].replace(",", "")) * UNIT_TO_MICROSECONDS[unit]
        count[name] += 1
    return total, count


def print_table(total, count, steps, what):
    all_us = sum(total.values())
    if not total:
        sys.exit("no gpu__time_duration.sum rows: was the CSV written by ncu --csv --metrics "
                 "gpu__time_duration.sum?")
    print("%d %s steps, %.1f us of kernel time per step, %d launches per step"
          % (steps, what, all_us / steps, sum(count.values()) / steps))
    print("%-70s %9s %8s %6s" % ("kernel", "us/step", "calls", "share"))
    for name, us in sorted(total.items(), key=lambda item: -item[1]):
        print("%-70s %9.2f %8d %5.1f%%" % (name, us / steps, count[name], 100 * us / all_us))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("csv", help="ncu --csv output")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--plan", help="the decoding plan the run translated")
    source.add_argument("--steps", type=int, help="training steps the run took")
    args = parser.parse_args()
    if args.steps is not None and args.steps < 1:
        parser.error(f"--steps must be >= 1, got {args.steps}")
    steps = decoding_steps(args.plan) if args.plan else args.steps
    total, count = kernel_times(args.csv)
    print_table(total, count, steps, "decoding" if args.plan else "training")


if __name__ == "__main__":
    main()
