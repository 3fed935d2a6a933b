#!/usr/bin/env python3
"""Compares training runs by what shows a stalled run (xlate-trainer's train_log.jsonl: the loss,
the targets' unigram entropy, each parameter group's update/parameter ratio and each layer's
largest activation; trainer/training/training_health.h), as a table on stdout and a chart.

    python3 bench/training_health.py RUN_DIR [RUN_DIR ...] [--labels a,b] [--png out.png]

For each run: the loss at every 100th logged step, the first step whose loss is 0.3 nats below
the unigram entropy (a model that has started to read the source), the groups that move least
and most at the last report, and the largest activation. The chart (matplotlib) draws the loss
curves against the entropy, the spread of the update ratios (smallest, median, largest group)
and the largest activation per report.
"""
import argparse
import json
import os
import statistics
import sys


def read_run(directory):
    entropy, reports = None, []
    with open(os.path.join(directory, "train_log.jsonl"), encoding="utf-8") as log:
        for line in log:
            event = json.loads(line)
            if event["event"] == "message" and "unigram entropy" in event["text"]:
                entropy = float(event["text"].split(" is ")[1].split(" nats")[0])
            elif event["event"] == "train":
                reports.append(event)
    return entropy, reports


def summary(label, entropy, reports):
    lines = [f"{label}: {len(reports)} reports, last step {reports[-1]['step']}"]
    if entropy is not None:
        below = next((r["step"] for r in reports if r["nll"] < entropy - 0.3), None)
        lines.append(f"  unigram entropy {entropy:.3f} nats; first report 0.3 below it: "
                     f"{'step ' + str(below) if below else 'none yet'}")
    marks = [r for r in reports if r["step"] % 100 == 0] or reports[-1:]
    lines.append("  loss: " + ", ".join(f"{r['step']}: {r['loss']:.3f}" for r in marks))
    last = reports[-1]
    ratios = last.get("update_ratio", {})
    if ratios:
        ordered = sorted(ratios.items(), key=lambda item: item[1])
        lines.append("  update ratios at the last report: least " + ", ".join(
            f"{g} {r:.1e}" for g, r in ordered[:3]) + "; most " + ", ".join(
            f"{g} {r:.1e}" for g, r in ordered[-3:]))
    maxima = last.get("activation_max", {})
    if maxima:
        layer, value = max(maxima.items(), key=lambda item: item[1])
        lines.append(f"  largest activation {value:.3g} ({layer})")
    return "\n".join(lines)


def draw(runs, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, (loss_axis, ratio_axis, activation_axis) = plt.subplots(1, 3, figsize=(16, 4.5))
    for label, entropy, reports in runs:
        steps = [r["step"] for r in reports]
        line, = loss_axis.plot(steps, [r["loss"] for r in reports], label=label)
        if entropy is not None:
            loss_axis.axhline(entropy, color=line.get_color(), linestyle=":", linewidth=1)
        with_ratios = [r for r in reports if r.get("update_ratio")]
        if with_ratios:
            ratio_steps = [r["step"] for r in with_ratios]
            values = [sorted(r["update_ratio"].values()) for r in with_ratios]
            ratio_axis.plot(ratio_steps, [statistics.median(v) for v in values],
                            color=line.get_color(), label=f"{label} (median)")
            ratio_axis.fill_between(ratio_steps, [v[0] for v in values], [v[-1] for v in values],
                                    color=line.get_color(), alpha=0.15)
        with_maxima = [r for r in reports if r.get("activation_max")]
        if with_maxima:
            activation_axis.plot([r["step"] for r in with_maxima],
                                 [max(r["activation_max"].values()) for r in with_maxima],
                                 color=line.get_color(), label=label)
    loss_axis.set(title="training loss (dotted: unigram entropy)", xlabel="step",
                  ylabel="nats per token")
    ratio_axis.set(title="update / parameter ratio (band: least to most)", xlabel="step",
                   yscale="log")
    activation_axis.set(title="largest activation of any layer", xlabel="step", yscale="log")
    for axis in (loss_axis, ratio_axis, activation_axis):
        axis.legend(fontsize=8)
        axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"wrote {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="run directories (xlate-trainer train --output)")
    parser.add_argument("--labels", help="comma-separated names for the runs")
    parser.add_argument("--png", help="draw the chart into this file")
    args = parser.parse_args()
    labels = args.labels.split(",") if args.labels else [os.path.basename(os.path.normpath(r))
                                                         for r in args.runs]
    if len(labels) != len(args.runs):
        parser.error(f"{len(labels)} labels for {len(args.runs)} runs")
    runs = []
    for label, directory in zip(labels, args.runs):
        try:
            entropy, reports = read_run(directory)
        except OSError as error:
            sys.exit(f"{directory}: {error}")
        if not reports:
            sys.exit(f"{directory}: no training reports in train_log.jsonl yet")
        runs.append((label, entropy, reports))
        print(summary(label, entropy, reports))
    if args.png:
        draw(runs, args.png)


if __name__ == "__main__":
    main()
