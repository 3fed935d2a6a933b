"""Build the golden models: a tiny random model plus reference logits, in two variants.

Run from anywhere:  python3 tests/reference/make_golden.py
Writes config.json, model.safetensors (F32) and golden.json into
  tests/data/tiny_golden/       d_k = d_v = d_model / heads (the paper's base/big shape; also
                                loads in Hugging Face's MarianMTModel)
  tests/data/tiny_golden_dkdv/  d_k = 3, d_v = 5 with 4 heads and d_model 16 (Table 3, row B)
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from transformer_reference import forward_logits, sinusoid_table, write_safetensors  # noqa: E402

DATA_DIR = os.path.join(HERE, "..", "data")

CONFIG = {
    "model_type": "marian",
    "vocab_size": 40,
    "d_model": 16,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 32,
    "decoder_ffn_dim": 32,
    "dropout": 0.1,
    "attention_dropout": 0.0,
    "activation_dropout": 0.0,
    "activation_function": "relu",
    "max_position_embeddings": 64,
    "scale_embedding": True,
    "normalize_before": False,
    "share_encoder_decoder_embeddings": True,
    "tie_word_embeddings": True,
    "pad_token_id": 0,
    "unk_token_id": 1,
    "bos_token_id": 2,
    "eos_token_id": 3,
    "decoder_start_token_id": 2,
    "xlate_positional": "sinusoidal",
    "xlate_label_smoothing": 0.1,
    "source_lang": "en",
    "target_lang": "de",
}

# src lengths 5, 9, 3 (end with eos 3); tgt prefix lengths 4, 6, 2 (start with bos 2)
SRC_LENGTHS = (5, 9, 3)
TGT_LENGTHS = (4, 6, 2)


def make_weights(cfg, rng):
    V, C, P = cfg["vocab_size"], cfg["d_model"], cfg["max_position_embeddings"]
    w = {}

    def normal(*shape, std=0.3):
        return rng.normal(0.0, std, size=shape)

    def linear(prefix, out_f, in_f):
        w[prefix + ".weight"] = normal(out_f, in_f)
        w[prefix + ".bias"] = normal(out_f, std=0.1)

    def norm(prefix):
        w[prefix + ".weight"] = 1.0 + normal(C, std=0.1)
        w[prefix + ".bias"] = normal(C, std=0.1)

    def attn(prefix, heads):
        dk = cfg.get("xlate_d_k") or C // heads
        dv = cfg.get("xlate_d_v") or C // heads
        linear(f"{prefix}.q_proj", heads * dk, C)
        linear(f"{prefix}.k_proj", heads * dk, C)
        linear(f"{prefix}.v_proj", heads * dv, C)
        linear(f"{prefix}.out_proj", C, heads * dv)

    w["model.shared.weight"] = normal(V, C)
    w["final_logits_bias"] = normal(1, V, std=0.05)
    pe = sinusoid_table(P, C)
    w["model.encoder.embed_positions.weight"] = pe.copy()
    w["model.decoder.embed_positions.weight"] = pe.copy()
    for l in range(cfg["encoder_layers"]):
        p = f"model.encoder.layers.{l}"
        attn(p + ".self_attn", cfg["encoder_attention_heads"])
        norm(p + ".self_attn_layer_norm")
        linear(p + ".fc1", cfg["encoder_ffn_dim"], C)
        linear(p + ".fc2", C, cfg["encoder_ffn_dim"])
        norm(p + ".final_layer_norm")
    for l in range(cfg["decoder_layers"]):
        p = f"model.decoder.layers.{l}"
        attn(p + ".self_attn", cfg["decoder_attention_heads"])
        norm(p + ".self_attn_layer_norm")
        attn(p + ".encoder_attn", cfg["decoder_attention_heads"])
        norm(p + ".encoder_attn_layer_norm")
        linear(p + ".fc1", cfg["decoder_ffn_dim"], C)
        linear(p + ".fc2", C, cfg["decoder_ffn_dim"])
        norm(p + ".final_layer_norm")
    # store as float32; the reference then reads exactly what the engine reads
    return {k: v.astype(np.float32) for k, v in w.items()}


def make_batch(cfg, rng):
    V = cfg["vocab_size"]
    src = [[int(t) for t in rng.integers(4, V, size=n - 1)] + [cfg["eos_token_id"]]
           for n in SRC_LENGTHS]
    tgt = [[cfg["bos_token_id"]] + [int(t) for t in rng.integers(4, V, size=n - 1)]
           for n in TGT_LENGTHS]
    return src, tgt


def round7(x):
    return float(f"{x:.7g}")


def write_golden(name, config, seed):
    out_dir = os.path.join(DATA_DIR, name)
    rng = np.random.default_rng(seed)
    weights = make_weights(config, rng)
    src, tgt = make_batch(config, rng)
    logits = forward_logits(config, weights, src, tgt)         # [B, T, V]

    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    write_safetensors(os.path.join(out_dir, "model.safetensors"), weights)
    golden = {
        "src": src,
        "tgt": tgt,
        "logits": [[[round7(v) for v in logits[b, t]] for t in range(len(tgt[b]))]
                   for b in range(len(tgt))],
        "tolerance": 1e-4,
        "generator": "tests/reference/make_golden.py",
    }
    with open(os.path.join(out_dir, "golden.json"), "w") as f:
        json.dump(golden, f)
        f.write("\n")
    print(f"wrote {os.path.normpath(out_dir)}: {len(weights)} tensors, "
          f"logit range [{logits.min():.3f}, {logits.max():.3f}]")


def main():
    write_golden("tiny_golden", CONFIG, 20170612)
    write_golden("tiny_golden_dkdv", dict(CONFIG, xlate_d_k=3, xlate_d_v=5), 20170613)


if __name__ == "__main__":
    main()
