"""Independent numpy reference of the xlate Transformer (Vaswani et al. 2017).

Follows docs/model-format.md: post-norm encoder-decoder, scaled embeddings plus
stored positional tables, multi-head attention, ReLU FFN, tied output projection.
Inference only (no dropout). Computes in float64.

Shape letters: B batch, S source length, T target length, C d_model,
H heads, D = C / H, F d_ff, V vocabulary.
"""
import json
import struct

import numpy as np

# ----------------------------------------------------------------------------
# safetensors
# ----------------------------------------------------------------------------

_ITEMSIZE = {"F32": 4, "F16": 2, "BF16": 2}


def _decode(dtype, raw, shape):
    if dtype == "F32":
        arr = np.frombuffer(raw, dtype="<f4")
    elif dtype == "F16":
        arr = np.frombuffer(raw, dtype="<f2").astype(np.float32)
    elif dtype == "BF16":
        # bfloat16 = the upper 16 bits of a float32
        bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        arr = bits.view(np.float32)
    else:
        raise ValueError(f"unknown dtype {dtype!r}")
    return arr.astype(np.float32).reshape(shape)


def read_safetensors(path):
    """Return {name: float32 ndarray} from a safetensors file (F32/F16/BF16)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: truncated (no header length)")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise ValueError(f"{path}: header length {n} exceeds file size")
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = blob[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype, shape = info["dtype"], list(info["shape"])
        begin, end = info["data_offsets"]
        if dtype not in _ITEMSIZE:
            raise ValueError(f"{path}: tensor {name}: unknown dtype {dtype!r}")
        count = int(np.prod(shape)) if shape else 1
        if not (0 <= begin <= end <= len(data)) or end - begin != count * _ITEMSIZE[dtype]:
            raise ValueError(f"{path}: tensor {name}: bad data_offsets {begin},{end}")
        out[name] = _decode(dtype, data[begin:end], shape)
    return out


def write_safetensors(path, tensors):
    """Write {name: array} as F32, names sorted, metadata {"format": "pt"}."""
    header = {"__metadata__": {"format": "pt"}}
    chunks, offset = [], 0
    for name in sorted(tensors):
        raw = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(np.shape(tensors[name])),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * (-len(hjson) % 8)  # pad header so data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for raw in chunks:
            f.write(raw)


# ----------------------------------------------------------------------------
# model
# ----------------------------------------------------------------------------

def sinusoid_table(P, C):
    """Paper's interleaved encoding: PE[pos,2i]=sin(pos/10000^(2i/C)), PE[pos,2i+1]=cos(...). [P, C]"""
    pos = np.arange(P, dtype=np.float64)[:, None]             # [P, 1]
    two_i = np.arange(0, C, 2, dtype=np.float64)[None, :]     # [1, C/2]
    angle = pos / np.power(10000.0, two_i / C)                # [P, C/2]
    pe = np.zeros((P, C), dtype=np.float64)
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, : C // 2])
    return pe


def _layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)             # biased variance
    return (x - mu) / np.sqrt(var + eps) * w + b


def _linear(x, W, prefix):
    return x @ W[prefix + ".weight"].T + W[prefix + ".bias"]   # weight is [out, in]


def _attention(W, prefix, q_in, kv_in, heads, allowed):
    """q_in [B,Tq,C], kv_in [B,Tk,C], allowed bool [B,Tq,Tk] (True = may attend).

    d_k and d_v come from the projection shapes: q_proj/k_proj are [H*d_k, C], v_proj is
    [H*d_v, C] (d_k = d_v = C/H unless the config sets xlate_d_k / xlate_d_v).
    """
    B, Tq, C = q_in.shape

    def split(x):                                              # [B,T,H*D] -> [B,H,T,D]
        return x.reshape(B, x.shape[1], heads, -1).transpose(0, 2, 1, 3)

    q = split(_linear(q_in, W, prefix + ".q_proj"))
    k = split(_linear(kv_in, W, prefix + ".k_proj"))
    v = split(_linear(kv_in, W, prefix + ".v_proj"))
    D = q.shape[-1]
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D)          # [B,H,Tq,Tk]
    scores = np.where(allowed[:, None], scores, -np.inf)
    scores -= scores.max(-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(-1, keepdims=True)
    ctx = (p @ v).transpose(0, 2, 1, 3).reshape(B, Tq, -1)     # concat heads: [B,Tq,H*d_v]
    return _linear(ctx, W, prefix + ".out_proj")


def _ffn(W, prefix, x):
    return _linear(np.maximum(_linear(x, W, prefix + ".fc1"), 0.0), W, prefix + ".fc2")


def _pad(seqs, pad_id):
    """Right-pad a ragged list -> ids [B, L] and valid mask [B, L]."""
    L = max(len(s) for s in seqs)
    ids = np.full((len(seqs), L), pad_id, dtype=np.int64)
    valid = np.zeros((len(seqs), L), dtype=bool)
    for b, s in enumerate(seqs):
        ids[b, : len(s)] = s
        valid[b, : len(s)] = True
    return ids, valid


def forward_logits(config, weights, src, tgt):
    """Teacher-forced forward pass. src, tgt: ragged lists of token ids.

    Returns float64 logits [B, T, V] with T = longest target; rows beyond a
    sentence's own target length are padding and meaningless.
    """
    W = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    C = config["d_model"]
    pad = config["pad_token_id"]
    E = W["model.shared.weight"]                               # [V, C]
    scale = np.sqrt(C) if config.get("scale_embedding", True) else 1.0

    src_ids, src_valid = _pad(src, pad)                        # [B, S]
    tgt_ids, _ = _pad(tgt, pad)                                # [B, T]
    B, S = src_ids.shape
    T = tgt_ids.shape[1]

    # encoder
    x = E[src_ids] * scale + W["model.encoder.embed_positions.weight"][:S]   # [B,S,C]
    enc_mask = np.broadcast_to(src_valid[:, None, :], (B, S, S))            # key padding
    for l in range(config["encoder_layers"]):
        p = f"model.encoder.layers.{l}"
        h = config["encoder_attention_heads"]
        x = _layer_norm(x + _attention(W, p + ".self_attn", x, x, h, enc_mask),
                        W[p + ".self_attn_layer_norm.weight"], W[p + ".self_attn_layer_norm.bias"])
        x = _layer_norm(x + _ffn(W, p, x),
                        W[p + ".final_layer_norm.weight"], W[p + ".final_layer_norm.bias"])

    # decoder
    y = E[tgt_ids] * scale + W["model.decoder.embed_positions.weight"][:T]   # [B,T,C]
    causal = np.broadcast_to(np.tril(np.ones((T, T), dtype=bool)), (B, T, T))
    cross_mask = np.broadcast_to(src_valid[:, None, :], (B, T, S))
    for l in range(config["decoder_layers"]):
        p = f"model.decoder.layers.{l}"
        h = config["decoder_attention_heads"]
        y = _layer_norm(y + _attention(W, p + ".self_attn", y, y, h, causal),
                        W[p + ".self_attn_layer_norm.weight"], W[p + ".self_attn_layer_norm.bias"])
        y = _layer_norm(y + _attention(W, p + ".encoder_attn", y, x, h, cross_mask),
                        W[p + ".encoder_attn_layer_norm.weight"], W[p + ".encoder_attn_layer_norm.bias"])
        y = _layer_norm(y + _ffn(W, p, y),
                        W[p + ".final_layer_norm.weight"], W[p + ".final_layer_norm.bias"])

    return y @ E.T + W["final_logits_bias"].reshape(-1)       # [B,T,V]
