#!/usr/bin/env python3
"""Draws the charts of README.md and docs/benchmarks.md from the committed benchmark results
(bench/results/*.json) into docs/img/.

    python3 bench/plot.py [--results bench/results] [--out docs/img]

Each chart is drawn from one JSON file when it is there, and skipped (with a line saying so)
when it is not:

  decoding_vs_ctranslate2.png  cpu_decoding_ctranslate2.json, gpu_decoding_ctranslate2.json:
                               xlate against CTranslate2 on the CPU (sentences/s, float32 and
                               int8, every thread setting) and on a GPU (target tokens/s)
  training_vs_pytorch.png      training_vs_pytorch_h100.json: trainer tokens/s against PyTorch
                               eager and torch.compile, per precision
  data_parallel_cpu.png        data_parallel_cpu.json: tokens/s of one process against two
                               ranks, with and without overlapped buckets
  nllb_load.png                nllb_load.json (bench/nllb_load.py --json_out): load time, peak
                               memory and sentences/s, xlate against transformers
  server_latency.png           server_latency.json: p50/p99 latency against offered load
                               ({"results": [{"offered_load": x, "p50_ms": y, "p99_ms": z}]})

Every JSON file names its source (doc section, machine, date, command) under "source"; the
charts' captions carry the machine and date. Needs matplotlib (python3 -m pip install
matplotlib).
"""
import argparse
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

XLATE = "#1f77b4"
XLATE_LIGHT = "#9ecae1"
PEER = "#ff7f0e"
PEER_LIGHT = "#fdd0a2"
PEER_DARK = "#a63603"


def load(results_dir, name):
    path = os.path.join(results_dir, name)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if "source" not in data:
        sys.exit(f"{path}: no \"source\" (doc section, machine, date, command)")
    return data


def caption(figure, *sources, notes=()):
    """One line per source under the chart (its machine and date), then the notes."""
    lines = [f"{s['machine']}; {s['date']}" for s in sources] + list(notes)
    figure.text(0.01, 0.01, "\n".join(lines), fontsize=7, color="#555555", va="bottom")


def thousands(value, _position):
    return f"{value:,.0f}"


def save(figure, path):
    # No software name (matplotlib's version) in the PNG's metadata: the same data gives the
    # same file whatever matplotlib drew it.
    figure.savefig(path, metadata={"Software": None})


def label_bars(axis, bars, fmt="{:,.0f}", fontsize=7):
    for bar in bars:
        height = bar.get_height()
        axis.annotate(fmt.format(height), (bar.get_x() + bar.get_width() / 2, height),
                      xytext=(0, 2), textcoords="offset points", ha="center", va="bottom",
                      fontsize=fontsize)


def decoding(plt, results_dir, out_dir):
    cpu = load(results_dir, "cpu_decoding_ctranslate2.json")
    gpu = load(results_dir, "gpu_decoding_ctranslate2.json")
    panels = [p for p in (cpu, gpu) if p]
    if not panels:
        return None
    figure, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 4.6), dpi=110,
                                squeeze=False)
    axes = list(axes[0])
    if cpu:
        axis = axes.pop(0)
        types = list(dict.fromkeys(r["compute_type"] for r in cpu["results"]))
        settings = list(dict.fromkeys((r["system"], r["setting"]) for r in cpu["results"]))
        colours = {("xlate", 0): XLATE_LIGHT, ("xlate", 1): XLATE, ("CTranslate2", 0): PEER_LIGHT,
                   ("CTranslate2", 1): PEER, ("CTranslate2", 2): PEER_DARK}
        width = 0.8 / len(settings)
        seen = {}
        for k, (system, setting) in enumerate(settings):
            index = seen.setdefault(system, 0)
            seen[system] += 1
            values = [next((r["sentences_per_second"] for r in cpu["results"]
                            if r["compute_type"] == t and r["system"] == system
                            and r["setting"] == setting), 0) for t in types]
            bars = axis.bar([i + (k - (len(settings) - 1) / 2) * width for i in range(len(types))],
                            values, width, label=f"{system}, {setting}",
                            color=colours.get((system, index), "#999999"))
            label_bars(axis, bars)
        for i, t in enumerate(types):
            best = {s: max(r["sentences_per_second"] for r in cpu["results"]
                           if r["compute_type"] == t and r["system"] == s)
                    for s in ("xlate", "CTranslate2")}
            top = max(best.values())
            axis.annotate(f"best / best: {best['xlate'] / best['CTranslate2']:.2f}x", (i, top),
                          xytext=(0, 16), textcoords="offset points", ha="center", fontsize=9,
                          fontweight="bold")
        axis.set_xticks(range(len(types)))
        axis.set_xticklabels(types)
        axis.set_ylim(0, max(r["sentences_per_second"] for r in cpu["results"]) * 1.25)
        axis.set_ylabel("sentences/s (higher is better)")
        axis.set_title("CPU, 2 cores: shipped model, Multi30k test_2016", fontsize=10)
        axis.legend(fontsize=7, loc="upper left")
        axis.grid(axis="y", alpha=0.3)
    if gpu:
        axis = axes.pop(0)
        rows = gpu["results"]
        labels = [f"{r['compute_type']}\nbatch {r['batch_size']}" for r in rows]
        x = range(len(rows))
        bars_x = axis.bar([i - 0.2 for i in x], [r["xlate"] for r in rows], 0.4, label="xlate",
                          color=XLATE)
        bars_c = axis.bar([i + 0.2 for i in x], [r["CTranslate2"] for r in rows], 0.4,
                          label="CTranslate2", color=PEER)
        label_bars(axis, bars_x)
        label_bars(axis, bars_c)
        for i, r in enumerate(rows):
            axis.annotate(f"{r['xlate'] / r['CTranslate2']:.2f}x",
                          (i, max(r["xlate"], r["CTranslate2"])), xytext=(0, 14),
                          textcoords="offset points", ha="center", fontsize=9,
                          fontweight="bold")
        axis.yaxis.set_major_formatter(thousands)
        axis.set_xticks(list(x))
        axis.set_xticklabels(labels)
        axis.set_ylim(0, max(max(r["xlate"], r["CTranslate2"]) for r in rows) * 1.22)
        axis.set_ylabel("target tokens/s (higher is better)")
        axis.set_title("GPU (H100): base-size model, newstest2014", fontsize=10)
        axis.legend(fontsize=8, loc="upper left")
        axis.grid(axis="y", alpha=0.3)
    figure.suptitle("Decoding throughput: xlate against CTranslate2 (beam 4, same weights)",
                    fontsize=11)
    caption(figure, *(p["source"] for p in panels))
    figure.tight_layout(rect=(0, 0.06, 1, 1))
    path = os.path.join(out_dir, "decoding_vs_ctranslate2.png")
    save(figure, path)
    plt.close(figure)
    return path


def training(plt, results_dir, out_dir):
    data = load(results_dir, "training_vs_pytorch_h100.json")
    if not data:
        return None
    rows = data["results"]
    precisions = list(dict.fromkeys(r["precision"] for r in rows))
    systems = list(dict.fromkeys(r["system"] for r in rows))
    colours = {"xlate": XLATE, "PyTorch eager": PEER, "PyTorch torch.compile": PEER_DARK}
    width = 0.8 / len(systems)
    calls = lambda system, precision: next((r["tokens_per_second"] for r in rows
                                            if r["system"] == system
                                            and r["precision"] == precision), None)
    figure, axis = plt.subplots(figsize=(7.5, 4.8), dpi=110)
    for k, system in enumerate(systems):
        for i, precision in enumerate(precisions):
            values = [v for v in calls(system, precision) or [] if v is not None]
            if not values:
                continue
            mean = sum(values) / len(values)
            x = i + (k - (len(systems) - 1) / 2) * width
            axis.bar(x, mean, width, yerr=[[mean - min(values)], [max(values) - mean]],
                     capsize=3, color=colours.get(system, "#999999"),
                     label=system if i == len(precisions) - 1 else None)
            axis.annotate(f"{mean:,.0f}", (x, max(values)), xytext=(0, 2),
                          textcoords="offset points", ha="center", va="bottom", fontsize=6.5)
    for i, precision in enumerate(precisions):
        # Ratios of the same call (xlate and PyTorch measured in one run of the benchmark).
        ours = calls("xlate", precision)
        lines = []
        for system, name in (("PyTorch eager", "eager"), ("PyTorch torch.compile", "compiled")):
            theirs = calls(system, precision)
            if not theirs:
                continue
            ratios = sorted(a / b for a, b in zip(ours, theirs) if a and b)
            if ratios:
                span = (f"{ratios[0]:.2f}" if len(ratios) == 1 or
                        f"{ratios[0]:.2f}" == f"{ratios[-1]:.2f}"
                        else f"{ratios[0]:.2f}-{ratios[-1]:.2f}")
                lines.append(f"{span}x {name}")
        top = max(max(v for v in r["tokens_per_second"] if v is not None) for r in rows
                  if r["precision"] == precision)
        axis.annotate("\n".join(lines), (i, top), xytext=(0, 14), textcoords="offset points",
                      ha="center", va="bottom", fontsize=8.5, fontweight="bold")
    axis.set_xticks(range(len(precisions)))
    axis.set_xticklabels([p if p == "fp32" else f"{p} (xlate: 16-bit activations)"
                          for p in precisions], fontsize=8)
    axis.set_ylim(0, max(max(v for v in r["tokens_per_second"] if v is not None)
                         for r in rows) * 1.32)
    axis.set_ylabel("source+target tokens/s (higher is better)")
    axis.yaxis.set_major_formatter(thousands)
    axis.set_title("Training the base model: xlate-trainer against PyTorch (H100, "
                   "50,000 tokens/step)", fontsize=10)
    axis.legend(fontsize=8, loc="upper left")
    axis.grid(axis="y", alpha=0.3)
    caption(figure, data["source"], notes=["bars: mean of the benchmark's calls, whiskers: "
                                           "their range; ratios: xlate / PyTorch in the same "
                                           "call"])
    figure.tight_layout(rect=(0, 0.07, 1, 1))
    path = os.path.join(out_dir, "training_vs_pytorch.png")
    save(figure, path)
    plt.close(figure)
    return path


def data_parallel(plt, results_dir, out_dir):
    data = load(results_dir, "data_parallel_cpu.json")
    if not data:
        return None
    rows = data["results"]
    figure, axis = plt.subplots(figsize=(8.5, 4.2), dpi=110)
    colours = [PEER if r["allreduce_seconds_per_step"] is None else
               (XLATE_LIGHT if r["allreduce_seconds_per_step"] == r["exposed_seconds_per_step"]
                else XLATE) for r in rows]
    bars = axis.barh(range(len(rows)), [r["tokens_per_second"] for r in rows], color=colours)
    for bar, r in zip(bars, rows):
        text = f"{r['tokens_per_second']:,.1f}"
        if r["allreduce_seconds_per_step"]:
            hidden = 1 - r["exposed_seconds_per_step"] / r["allreduce_seconds_per_step"]
            text += f"  ({hidden:.0%} of the all-reduce hidden)"
        axis.text(bar.get_width() + 10, bar.get_y() + bar.get_height() / 2, text, va="center",
                  fontsize=8)
    axis.set_yticks(range(len(rows)))
    axis.set_yticklabels([r["configuration"] for r in rows], fontsize=8)
    axis.invert_yaxis()
    axis.set_xlim(0, max(r["tokens_per_second"] for r in rows) * 1.75)
    axis.xaxis.set_major_formatter(thousands)
    axis.set_xlabel("tokens/s (higher is better)")
    axis.set_title("Data-parallel training on 2 CPU cores: base model, 4,000 tokens/step",
                   fontsize=10)
    axis.grid(axis="x", alpha=0.3)
    caption(figure, data["source"])
    figure.tight_layout(rect=(0, 0.06, 1, 1))
    path = os.path.join(out_dir, "data_parallel_cpu.png")
    save(figure, path)
    plt.close(figure)
    return path


def nllb(plt, results_dir, out_dir):
    data = load(results_dir, "nllb_load.json")
    if not data:
        return None
    systems = [name for name in data if name != "source"]
    colours = [XLATE if name.startswith("xlate") and "int8" not in name else
               XLATE_LIGHT if name.startswith("xlate") else PEER for name in systems]
    figure, axes = plt.subplots(1, 3, figsize=(10.5, 3.9), dpi=110)
    for axis, key, title, fmt in (
            (axes[0], "load_seconds", "load (s, lower is better)", "{:.1f}"),
            (axes[1], "peak_rss_mb", "peak resident memory (MB, lower is better)", "{:,.0f}"),
            (axes[2], "sentences_per_second", "sentences/s (higher is better)", "{:.3f}")):
        values = [data[name][key] for name in systems]
        bars = axis.bar(range(len(systems)), values, color=colours)
        label_bars(axis, bars, fmt=fmt, fontsize=8)
        axis.set_xticks(range(len(systems)))
        axis.set_xticklabels([name.replace(" ", "\n", 1) for name in systems], fontsize=8)
        axis.set_title(title, fontsize=9)
        axis.set_ylim(0, max(values) * 1.18)
        axis.grid(axis="y", alpha=0.3)
    figure.suptitle("An NLLB-200-distilled-600M-shaped model on 2 CPU cores (beam 4, 20 "
                    "sentences)", fontsize=10)
    caption(figure, data["source"], notes=[
        "random weights: outputs capped at source + 20 tokens; transformers' load maps the "
        "safetensors file lazily (memory-mapped: pages are read when first used)"])
    figure.tight_layout(rect=(0, 0.08, 1, 1))
    path = os.path.join(out_dir, "nllb_load.png")
    save(figure, path)
    plt.close(figure)
    return path


def server_latency(plt, results_dir, out_dir):
    data = load(results_dir, "server_latency.json")
    if not data:
        return None
    rows = sorted(data["results"], key=lambda r: r["offered_load"])
    figure, axis = plt.subplots(figsize=(6.5, 4.2), dpi=110)
    loads = [r["offered_load"] for r in rows]
    axis.plot(loads, [r["p50_ms"] for r in rows], "o-", color=XLATE, label="p50")
    axis.plot(loads, [r["p99_ms"] for r in rows], "s--", color=PEER, label="p99")
    axis.set_xlabel(data.get("load_unit", "offered load"))
    axis.set_ylabel("latency (ms)")
    axis.set_title("xlate-server: latency against offered load", fontsize=10)
    axis.legend(fontsize=8)
    axis.grid(alpha=0.3)
    caption(figure, data["source"])
    figure.tight_layout(rect=(0, 0.06, 1, 1))
    path = os.path.join(out_dir, "server_latency.png")
    save(figure, path)
    plt.close(figure)
    return path


CHARTS = (decoding, training, data_parallel, nllb, server_latency)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", default=os.path.join(REPO, "bench", "results"))
    parser.add_argument("--out", default=os.path.join(REPO, "docs", "img"))
    args = parser.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("matplotlib is needed: python3 -m pip install matplotlib")
    os.makedirs(args.out, exist_ok=True)
    for chart in CHARTS:
        path = chart(plt, args.results, args.out)
        print(f"{chart.__name__}: " + (f"wrote {path}" if path else "no results, skipped"))


if __name__ == "__main__":
    main()
