#!/usr/bin/env python3
"""Converts a Hugging Face model directory's PyTorch weights (pytorch_model.bin, or the shards
that pytorch_model.bin.index.json names) into model.safetensors beside them, which xlate reads.
xlate does not read pickles itself: unpickling a file can run code it holds.

    python3 scripts/convert_pytorch_to_safetensors.py MODEL_DIR

Needs torch and safetensors (pip install torch safetensors). Loads with weights_only=True, so
that a pickle that holds more than tensors is refused. Tensors that share storage (tied
embeddings) are stored once each, under each of their names; the rest of the directory
(config.json, the tokenizer) is left as it is.
"""
import json
import os
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    directory = sys.argv[1]
    import torch
    from safetensors.torch import save_file

    index = os.path.join(directory, "pytorch_model.bin.index.json")
    if os.path.exists(index):
        with open(index, encoding="utf-8") as f:
            shards = sorted(set(json.load(f)["weight_map"].values()))
    else:
        shards = ["pytorch_model.bin"]
    tensors = {}
    for shard in shards:
        path = os.path.join(directory, shard)
        if not os.path.exists(path):
            sys.exit(f"{path} is missing")
        state = torch.load(path, map_location="cpu", weights_only=True)
        for name, tensor in state.items():
            # A copy of each: safetensors refuses tensors that share memory.
            tensors[name] = tensor.detach().clone().contiguous()
    output = os.path.join(directory, "model.safetensors")
    save_file(tensors, output, metadata={"format": "pt"})
    print(f"wrote {output}: {len(tensors)} tensors from {', '.join(shards)}")


if __name__ == "__main__":
    main()
