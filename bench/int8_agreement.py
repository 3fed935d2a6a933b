#!/usr/bin/env python3
"""How closely int8 inference follows float32 on the same model: `xlate translate` runs the test
set twice, --compute_type float32 and int8 (weights quantised at load, per output row), and the
script reports the share of sentences translated identically, the BLEU of the int8 output taking
float32's as the reference (100 = the same output), and each output's BLEU against the human
references. The speed of int8 is measured elsewhere (bench/compare_ctranslate2.py).

    python3 bench/int8_agreement.py --model_dir models/en-de-multi30k \\
        --source ../shared/data/multi30k/test_2016_flickr.en.gz \\
        --reference ../shared/data/multi30k/test_2016_flickr.de.gz [--json_out F]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from compare_ctranslate2 import DEFAULT_XLATE, bleu, read_lines


def translate(args, compute_type, source_path, work_dir):
    output_path = os.path.join(work_dir, compute_type + ".txt")
    command = [args.xlate, "translate", "--model_dir", args.model_dir, "--input", source_path,
               "--output", output_path, "--device", "cpu", "--compute_type", compute_type,
               "--threads", str(args.threads), "--beam_size", str(args.beam_size),
               "--split_sentences=false"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"xlate translate --compute_type {compute_type} failed "
                 f"(exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    return read_lines(output_path, 0)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--source", required=True, help="source text (.gz read as such)")
    parser.add_argument("--reference", required=True, help="reference text (.gz read as such)")
    parser.add_argument("--sentences", type=int, default=0, help="first N sentences (0 = all)")
    parser.add_argument("--beam_size", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--xlate", default=DEFAULT_XLATE)
    parser.add_argument("--json_out", default=None)
    args = parser.parse_args()
    if args.sentences < 0:
        parser.error(f"--sentences is {args.sentences}; it must be >= 0")

    sources = read_lines(args.source, args.sentences)
    references = read_lines(args.reference, args.sentences)
    if not sources or len(sources) != len(references):
        sys.exit(f"{args.source} has {len(sources)} lines and {args.reference} "
                 f"{len(references)}: they must be equally many, at least one")
    with tempfile.TemporaryDirectory() as work_dir:
        source_path = os.path.join(work_dir, "source.txt")
        with open(source_path, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in sources))
        outputs = {t: translate(args, t, source_path, work_dir) for t in ("float32", "int8")}
        identical = sum(a == b for a, b in zip(outputs["float32"], outputs["int8"]))
        report = {
            "model_dir": args.model_dir, "sentences": len(sources), "beam_size": args.beam_size,
            "identical_sentences": identical,
            "identical_share": identical / len(sources),
            # float32's output as the reference: 100 when int8 says exactly the same.
            "int8_bleu_against_float32": bleu(args.xlate, outputs["int8"], outputs["float32"],
                                              work_dir, "agreement"),
            "float32_bleu": bleu(args.xlate, outputs["float32"], references, work_dir, "f32"),
            "int8_bleu": bleu(args.xlate, outputs["int8"], references, work_dir, "int8"),
        }
    print(f"{report['sentences']} sentences, beam {args.beam_size}: "
          f"{identical} identical ({100 * report['identical_share']:.1f} %), "
          f"int8 BLEU against float32 {report['int8_bleu_against_float32']:.1f}; "
          f"against the references float32 {report['float32_bleu']:.2f}, "
          f"int8 {report['int8_bleu']:.2f}")
    print(json.dumps(report))
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
