#!/usr/bin/env python3
"""transformers' greedy generate under the repetition guards, as references for xlate's.

Usage:
    python3 tests/hf/make_guard_references.py [FIXTURES_DIR]

FIXTURES_DIR defaults to tests/data/hf.  For each Marian fixture there (written by
make_marian_fixtures.py) it writes guards.json: for each case of GUARD_CASES, the
ids transformers' greedy `generate` produces for the first SENTENCES source
sentences of expected.json with that case's repetition_penalty and
no_repeat_ngram_size, and the sum of their log-probabilities (log_softmax of the
processed logits, float32).  Greedy search is where transformers, like
CTranslate2 and xlate, applies both guards to the logits before the softmax (its
beam search applies them to log-probabilities), so its greedy outputs are the
reference for xlate's rule.  Deterministic (one torch thread, no sampling);
about ten seconds on one core.
"""

import json
import os
import sys

import torch
import transformers
from transformers import MarianMTModel

SENTENCES = 40
EXTRA_NEW_TOKENS = 50  # as make_marian_fixtures.py: max_new_tokens = len(ids) - 1 + 50
GUARD_CASES = [
    {"repetition_penalty": 1.5, "no_repeat_ngram_size": 0},
    {"repetition_penalty": 0.8, "no_repeat_ngram_size": 0},
    {"repetition_penalty": 1.0, "no_repeat_ngram_size": 2},
    {"repetition_penalty": 1.2, "no_repeat_ngram_size": 3},
]


def references(model_dir):
    with open(os.path.join(model_dir, "expected.json"), encoding="utf-8") as f:
        expected = json.load(f)
    model = MarianMTModel.from_pretrained(model_dir, attn_implementation="eager")
    model.eval()
    eos_id = model.config.eos_token_id
    cases = []
    for guards in GUARD_CASES:
        outputs = []
        for ids in expected["source_ids"][:SENTENCES]:
            input_ids = torch.tensor([ids])
            with torch.no_grad():
                out = model.generate(
                    input_ids,
                    attention_mask=torch.ones_like(input_ids),
                    num_beams=1,
                    do_sample=False,
                    max_new_tokens=len(ids) - 1 + EXTRA_NEW_TOKENS,
                    output_scores=True,
                    return_dict_in_generate=True,
                    **guards,
                )
            gen = out.sequences[0].tolist()[1:]
            log_prob = sum(
                float(torch.log_softmax(s[0], dim=-1)[token]) for s, token in zip(out.scores, gen)
            )
            outputs.append({"ids": gen, "log_prob": log_prob, "ended": gen[-1] == eos_id})
        cases.append({"options": guards, "greedy": outputs})
    return {
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "generate_call": (
            "model.generate(input_ids, attention_mask=ones, num_beams=1, do_sample=False, "
            "max_new_tokens=len(source_ids) - 1 + 50, output_scores=True, "
            "return_dict_in_generate=True, repetition_penalty=..., no_repeat_ngram_size=...)"
        ),
        "sentences": SENTENCES,
        "cases": cases,
    }


def main():
    torch.set_num_threads(1)
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "data", "hf")
    for name in sorted(os.listdir(root)):
        model_dir = os.path.join(root, name)
        if not name.startswith("marian-") or not os.path.isdir(model_dir):
            continue
        result = references(model_dir)
        with open(os.path.join(model_dir, "guards.json"), "w", encoding="utf-8") as f:
            json.dump(result, f, ensure_ascii=False)
            f.write("\n")
        changed = sum(
            case["greedy"][i]["ids"] != result["cases"][0]["greedy"][i]["ids"]
            for case in result["cases"][1:] for i in range(SENTENCES))
        print(f"{name}: {len(result['cases'])} cases, {changed} outputs differ from case 0")


if __name__ == "__main__":
    main()
