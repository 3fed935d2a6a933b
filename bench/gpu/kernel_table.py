#!/usr/bin/env python3
"""Device time per decoding step, split by kernel, from an Nsight Compute CSV of one plan's run
(ncu --metrics gpu__time_duration.sum --csv xlate_translate_bench ... --plan PLAN).

    python3 bench/gpu/kernel_table.py KERNELS.csv PLAN.tsv

Decoding steps = the plan's per-batch decode lengths summed over batches (every step of a batch
runs the decoder once); encoder kernels are included, spread over the steps like the rest."""

import collections
import csv
import sys


def main(csv_path, plan_path):
    lengths = {}
    with open(plan_path, encoding="utf-8") as f:
        for line in f:
            batch, length = line.split("\t")[:2]
            lengths[batch] = int(length)
    steps = sum(lengths.values())
    total = collections.defaultdict(float)
    count = collections.Counter()
    with open(csv_path, encoding="utf-8", errors="replace") as f:
        rows = [line for line in f if line.startswith('"')]
    for row in csv.DictReader(rows):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3,
                 "msecond": 1e3}[row["Metric Unit"]]
        name = row["Kernel Name"].split("(")[0][:70]
        total[name] += value * scale
        count[name] += 1
    all_us = sum(total.values())
    print("%d decoding steps, %.1f us of kernel time per step, %d launches per step"
          % (steps, all_us / steps, sum(count.values()) / steps))
    print("%-70s %9s %8s %6s" % ("kernel", "us/step", "calls", "share"))
    for name, us in sorted(total.items(), key=lambda item: -item[1]):
        print("%-70s %9.2f %8d %5.1f%%" % (name, us / steps, count[name], 100 * us / all_us))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
