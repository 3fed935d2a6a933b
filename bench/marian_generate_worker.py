#!/usr/bin/env python3
"""Hugging Face Transformers' MarianMT `generate` on an xlate model directory, as a peer in
bench/compare_ctranslate2.py (`--marian`). Runs in a process of its own:

    python3 bench/marian_generate_worker.py JOB.json OUT.json

xlate's model directory is a Marian checkpoint already (config.json with MarianConfig keys,
model.safetensors with Marian tensor names), so MarianMTModel loads the very same weights. The job
gives the batches as source token ids and the fixed decode length L_b of each batch: generate runs
beam search with min_new_tokens = max_new_tokens = L_b, so every hypothesis has L_b tokens and the
work equals the other systems'. Only the generate calls are timed, after torch.cuda.synchronize().
"""

import json
import sys
import time


def main(job_path, out_path):
    with open(job_path, encoding="utf-8") as f:
        job = json.load(f)
    import torch
    from transformers import MarianMTModel

    device = job["device"]
    dtype = {"float32": torch.float32, "float16": torch.float16,
             "bfloat16": torch.bfloat16}[job["compute_type"]]
    model = MarianMTModel.from_pretrained(job["model_dir"], torch_dtype=dtype).to(device).eval()
    pad = model.config.pad_token_id

    def generate(batch):
        longest = max(len(ids) for ids in batch["ids"])
        ids = torch.full((len(batch["ids"]), longest), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for row, source in enumerate(batch["ids"]):
            ids[row, :len(source)] = torch.tensor(source)
            mask[row, :len(source)] = 1
        with torch.inference_mode():
            return model.generate(
                input_ids=ids.to(device), attention_mask=mask.to(device),
                num_beams=job["beam_size"], length_penalty=job["length_penalty"],
                min_new_tokens=batch["length"], max_new_tokens=batch["length"],
                early_stopping=False, do_sample=False)

    for batch in job["batches"][:job.get("warmup_batches", 1)]:
        generate(batch)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    seconds, sentences, target_tokens = 0.0, 0, 0
    for batch in job["batches"]:
        start = time.perf_counter()
        output = generate(batch)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        seconds += time.perf_counter() - start
        sentences += output.shape[0]
        target_tokens += output.shape[0] * batch["length"]  # the decoder start token excluded
    result = {
        "system": "marian-hf",
        "sentences": sentences,
        "target_tokens": target_tokens,
        "seconds": seconds,
        "tokens_per_second": target_tokens / seconds,
        "sentences_per_second": sentences / seconds,
        "gpu_memory_mb": (torch.cuda.max_memory_allocated() / 2**20
                          if device.startswith("cuda") else None),
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
