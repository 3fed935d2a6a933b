#!/usr/bin/env python3
"""Draws training and validation loss (per target token, nats) against steps from an
xlate-trainer log (RUN/train_log.jsonl) into a PNG.

  python3 models/plot_training.py RUN/train_log.jsonl models/en-de-multi30k/training.png
"""
import argparse
import json
import sys


def read_log(path):
    train, valid = [], []
    with open(path, encoding="utf-8") as log:
        for line_number, line in enumerate(log, 1):
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as error:
                sys.exit(f"{path}:{line_number}: not JSON ({error})")
            if entry.get("event") == "train":
                train.append(entry)
            elif entry.get("event") == "valid":
                valid.append(entry)
    # A resumed run may repeat steps after its last checkpoint: keep the latest of each step.
    latest = lambda entries: sorted({e["step"]: e for e in entries}.values(), key=lambda e: e["step"])
    return latest(train), latest(valid)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("log")
    parser.add_argument("png")
    parser.add_argument("--title", default="xlate-trainer")
    args = parser.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("matplotlib is needed: python3 -m pip install matplotlib")
    train, valid = read_log(args.log)
    if not train:
        sys.exit(f"{args.log} has no training entries")
    figure, axis = plt.subplots(figsize=(7, 4.2), dpi=110)
    axis.plot([e["step"] for e in train], [e["loss"] for e in train], label="training loss",
              linewidth=1)
    if valid:
        axis.plot([e["step"] for e in valid], [e["loss"] for e in valid], "o-",
                  label="validation loss")
        with_bleu = [e for e in valid if "bleu" in e]
        if with_bleu:
            bleu_axis = axis.twinx()
            bleu_axis.plot([e["step"] for e in with_bleu], [e["bleu"] for e in with_bleu], "s--",
                           color="tab:green", label="validation BLEU")
            bleu_axis.set_ylabel("BLEU (sacreBLEU, dev subset)")
            bleu_axis.legend(loc="center right")
    axis.set_xlabel("step")
    axis.set_ylabel("label-smoothed loss per token (nats)")
    axis.set_title(args.title)
    axis.grid(alpha=0.3)
    axis.legend(loc="upper center")
    figure.tight_layout()
    figure.savefig(args.png)
    print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
