#!/usr/bin/env python3
"""The Hugging Face fixtures of tests/data/hf translated on the GPU, as a user runs them.

For each fixture directory with an expected.json (written by transformers' `generate`, see
tests/hf/), `xlate translate` runs its sentences on the CPU and on CUDA in float32 (CUDA's default
float16 drifts apart on these random models' long, repetitive outputs), greedy and with beam 4,
and the script counts lines where CUDA's output equals the CPU's and, greedy, where it equals
transformers' text. The fixtures are random models whose top two logits can be close
(expected.json's min_top2_margin), so a differing line is reported with the fixture, not hidden.
Exit status 1 when any run fails or a greedy CUDA line differs from the CPU's.
usage: hf_on_cuda.py --xlate BIN --fixtures tests/data/hf --workdir DIR
"""
import argparse
import json
import pathlib
import subprocess
import sys


def translate(xlate, fixture, sentences_file, device, beam, languages):
    command = [xlate, "translate", "--model_dir", str(fixture), "--input", str(sentences_file),
               "--device", device, "--beam_size", str(beam), "--split_sentences=false",
               "--compute_type", "float32"]
    command += languages
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {result.returncode}: "
                           f"{result.stderr[-2000:]}")
    return result.stdout.splitlines()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--xlate", required=True)
    parser.add_argument("--fixtures", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--devices", default="cpu,cuda",
                        help="the reference device and the device checked (cpu,cpu tries the "
                             "script on a machine without a GPU)")
    args = parser.parse_args()
    workdir = pathlib.Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    failed = False
    for expected_file in sorted(pathlib.Path(args.fixtures).glob("*/expected.json")):
        fixture = expected_file.parent
        expected = json.loads(expected_file.read_text())
        # A multilingual Marian fixture's sentences start with their ">>deu<< " prefix, which
        # the CLI adds itself from --target_language.
        source_prefix = expected.get("source_prefix", "")
        sentences = [s[len(source_prefix):] if source_prefix and s.startswith(source_prefix)
                     else s for s in expected["sentences"]]
        sentences_file = workdir / f"{fixture.name}.src"
        sentences_file.write_text("".join(s + "\n" for s in sentences))
        # M2M100 and NLLB take both languages from the request; a multilingual Marian model the
        # target (its ">>deu<< " source prefix); others' are in the model's name.
        prefix = source_prefix.strip().strip("<>")
        languages = (["--source_language", "en", "--target_language", "de"]
                     if "source_lang" in expected else
                     ["--target_language", prefix] if prefix else [])
        try:
            outputs = {(role, beam): translate(args.xlate, fixture, sentences_file, device,
                                               beam, languages)
                       for role, device in zip(("cpu", "cuda"), args.devices.split(","))
                       for beam in (1, 4)}
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            print(f"{fixture.name}: FAILED {error}")
            failed = True
            continue
        for beam in (1, 4):
            cpu, cuda = outputs[("cpu", beam)], outputs[("cuda", beam)]
            same = sum(a == b for a, b in zip(cpu, cuda))
            print(f"{fixture.name} beam {beam}: CUDA equals CPU on {same}/{len(sentences)}")
            for i, (a, b) in enumerate(zip(cpu, cuda)):
                if a != b:
                    print(f"  sentence {i}: cpu {a!r}\n               cuda {b!r}")
            if beam == 1 and same != len(sentences):
                failed = True
        reference = [entry["text"] for entry in expected["greedy"]]
        same = sum(a == b for a, b in zip(outputs[("cuda", 1)], reference))
        print(f"{fixture.name} greedy: CUDA equals transformers on {same}/{len(reference)}")
    print("hf_on_cuda:", "FAILED" if failed else "all greedy CUDA outputs equal the CPU's")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
