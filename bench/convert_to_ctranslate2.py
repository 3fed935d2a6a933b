#!/usr/bin/env python3
"""Convert an xlate model directory into a CTranslate2 model directory.

    python3 bench/convert_to_ctranslate2.py --model_dir D --out O [--force] [--add_source_eos]

The xlate model directory is described in docs/model-format.md: config.json (MarianConfig keys),
model.safetensors (Hugging Face Marian tensor names) and spm.model. The CTranslate2 model is built
with CTranslate2's own Python specification API (ctranslate2.specs) and saved in float32:

  * post-norm Transformer (pre_norm=False), ReLU feed-forward, the layer and head counts of
    config.json, LayerNorm epsilon 1e-5;
  * one embedding matrix shared by encoder input, decoder input and the pre-softmax projection
    (CTranslate2 stores it once and aliases the other two), embeddings scaled by sqrt(d_model);
  * the positional tables are the STORED tables of model.safetensors (CTranslate2 would otherwise
    generate its own, differently laid out sinusoid);
  * final_logits_bias becomes the bias of the output projection;
  * the vocabulary is the list of spm.model pieces in id order, so token id i in CTranslate2 is
    token id i in xlate; unk/bos/eos/decoder-start tokens are the pieces at the ids of
    config.json, and the pad piece sits at pad_token_id.

Only numpy, sentencepiece and ctranslate2 are needed; the safetensors reader is our own.
"""

import argparse
import json
import math
import os
import shutil
import struct
import sys

import numpy as np


# --------------------------------------------------------------------------------------------
# safetensors


class ModelFormatError(Exception):
    pass


_ITEM_SIZE = {"F32": 4, "F16": 2, "BF16": 2}


def _decode_tensor(raw, dtype):
    """Decodes little-endian raw bytes of one tensor into a float32 numpy array (1-D)."""
    if dtype == "F32":
        return np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if dtype == "F16":
        return np.frombuffer(raw, dtype="<f2").astype(np.float32)
    if dtype == "BF16":
        # bfloat16 is the upper half of a float32.
        bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32)
    raise AssertionError(dtype)


def read_safetensors(path):
    """Returns {name: float32 ndarray} for every tensor of a safetensors file."""
    try:
        size = os.path.getsize(path)
        f = open(path, "rb")
    except OSError as e:
        raise ModelFormatError("%s: cannot open: %s" % (path, e))
    with f:
        head = f.read(8)
        if len(head) != 8:
            raise ModelFormatError("%s: truncated file (no 8-byte header length)" % path)
        (header_len,) = struct.unpack("<Q", head)
        if header_len > size - 8:
            raise ModelFormatError(
                "%s: header length %d points outside the file (%d bytes)" % (path, header_len, size))
        try:
            header = json.loads(f.read(header_len).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise ModelFormatError("%s: header is not JSON: %s" % (path, e))
        if not isinstance(header, dict):
            raise ModelFormatError("%s: header is not a JSON object" % path)
        data_start = 8 + header_len
        data_size = size - data_start
        tensors = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            try:
                dtype = info["dtype"]
                shape = [int(d) for d in info["shape"]]
                begin, end = (int(x) for x in info["data_offsets"])
            except (KeyError, TypeError, ValueError):
                raise ModelFormatError("%s: tensor %s: malformed header entry %r" % (path, name, info))
            if dtype not in _ITEM_SIZE:
                raise ModelFormatError(
                    "%s: tensor %s: unknown dtype %r (expected F32, F16 or BF16)" % (path, name, dtype))
            count = int(np.prod(shape, dtype=np.int64)) if shape else 1
            if not (0 <= begin <= end <= data_size):
                raise ModelFormatError(
                    "%s: tensor %s: data_offsets [%d, %d] point outside the data section (%d bytes)"
                    % (path, name, begin, end, data_size))
            if end - begin != count * _ITEM_SIZE[dtype]:
                raise ModelFormatError(
                    "%s: tensor %s: %d bytes for shape %s of %s (expected %d)"
                    % (path, name, end - begin, shape, dtype, count * _ITEM_SIZE[dtype]))
            f.seek(data_start + begin)
            raw = f.read(end - begin)
            if len(raw) != end - begin:
                raise ModelFormatError("%s: tensor %s: truncated file" % (path, name))
            tensors[name] = _decode_tensor(raw, dtype).reshape(shape)
        return tensors


# --------------------------------------------------------------------------------------------
# xlate model directory


def load_xlate_model(model_dir):
    """Reads config.json, the tensors and the spm vocabulary; checks names and shapes."""
    cfg_path = os.path.join(model_dir, "config.json")
    st_path = os.path.join(model_dir, "model.safetensors")
    spm_path = os.path.join(model_dir, "spm.model")
    for p in (cfg_path, st_path, spm_path):
        if not os.path.isfile(p):
            raise ModelFormatError("%s: missing file" % p)
    with open(cfg_path, encoding="utf-8") as f:
        try:
            cfg = json.load(f)
        except ValueError as e:
            raise ModelFormatError("%s: not JSON: %s" % (cfg_path, e))

    def get(key, default=None):
        if key in cfg:
            return cfg[key]
        if default is None:
            raise ModelFormatError("%s: missing key %r" % (cfg_path, key))
        return default

    if get("activation_function", "relu") != "relu":
        raise ModelFormatError("%s: activation_function must be relu" % cfg_path)
    if get("normalize_before", False):
        raise ModelFormatError("%s: normalize_before must be false (post-norm)" % cfg_path)
    if not get("scale_embedding", True):
        raise ModelFormatError("%s: scale_embedding must be true" % cfg_path)

    V = int(get("vocab_size"))
    C = int(get("d_model"))
    P = int(get("max_position_embeddings"))
    enc_layers, dec_layers = int(get("encoder_layers")), int(get("decoder_layers"))
    enc_ffn, dec_ffn = int(get("encoder_ffn_dim")), int(get("decoder_ffn_dim"))
    for key in ("encoder_attention_heads", "decoder_attention_heads"):
        if C % int(get(key)) != 0:
            raise ModelFormatError("%s: d_model %d is not divisible by %s" % (cfg_path, C, key))
    for key in ("xlate_d_k", "xlate_d_v"):
        if cfg.get(key, 0):
            raise ModelFormatError("%s: %s = %s: CTranslate2's Transformer needs d_k = d_v = "
                                   "d_model / heads" % (cfg_path, key, cfg[key]))

    tensors = read_safetensors(st_path)

    expected = {
        "model.shared.weight": (V, C),
        "final_logits_bias": (1, V),
        "model.encoder.embed_positions.weight": (P, C),
        "model.decoder.embed_positions.weight": (P, C),
    }

    def attn(prefix):
        for p in ("q", "k", "v", "out"):
            expected["%s.%s_proj.weight" % (prefix, p)] = (C, C)
            expected["%s.%s_proj.bias" % (prefix, p)] = (C,)

    def norm(prefix):
        expected[prefix + ".weight"] = (C,)
        expected[prefix + ".bias"] = (C,)

    def ffn(prefix, F):
        expected[prefix + ".fc1.weight"] = (F, C)
        expected[prefix + ".fc1.bias"] = (F,)
        expected[prefix + ".fc2.weight"] = (C, F)
        expected[prefix + ".fc2.bias"] = (C,)
        norm(prefix + ".final_layer_norm")

    for i in range(enc_layers):
        p = "model.encoder.layers.%d" % i
        attn(p + ".self_attn")
        norm(p + ".self_attn_layer_norm")
        ffn(p, enc_ffn)
    for i in range(dec_layers):
        p = "model.decoder.layers.%d" % i
        attn(p + ".self_attn")
        norm(p + ".self_attn_layer_norm")
        attn(p + ".encoder_attn")
        norm(p + ".encoder_attn_layer_norm")
        ffn(p, dec_ffn)

    for name, shape in expected.items():
        if name not in tensors:
            raise ModelFormatError("%s: missing tensor %s (expected shape %s)" % (st_path, name, list(shape)))
        if tuple(tensors[name].shape) != shape:
            raise ModelFormatError("%s: tensor %s has shape %s, expected %s"
                                   % (st_path, name, list(tensors[name].shape), list(shape)))

    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=spm_path)
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    if len(pieces) > V:
        raise ModelFormatError("%s: %d pieces but vocab_size is %d" % (spm_path, len(pieces), V))
    # Rows beyond the SentencePiece vocabulary (e.g. a vocab_size rounded up) get unique
    # placeholder names: CTranslate2 needs one distinct string per id.
    taken = set(pieces)
    k = 0
    while len(pieces) < V:
        name = "<xlate_unused_%d>" % k
        k += 1
        if name not in taken:
            pieces.append(name)
    if len(set(pieces)) != len(pieces):
        raise ModelFormatError("%s: vocabulary holds duplicate pieces" % spm_path)

    ids = {}
    for key in ("pad_token_id", "unk_token_id", "bos_token_id", "eos_token_id"):
        v = int(get(key))
        if not 0 <= v < V:
            raise ModelFormatError("%s: %s = %d is outside the vocabulary" % (cfg_path, key, v))
        ids[key] = v
    ids["decoder_start_token_id"] = int(cfg.get("decoder_start_token_id", ids["bos_token_id"]))
    # Sanity: the SentencePiece model should agree with config.json where it defines the id.
    for key, sp_id in (("pad_token_id", sp.pad_id()), ("unk_token_id", sp.unk_id()),
                       ("bos_token_id", sp.bos_id()), ("eos_token_id", sp.eos_id())):
        if sp_id >= 0 and sp_id != ids[key]:
            print("warning: %s is %d in config.json but %d in spm.model; using config.json"
                  % (key, ids[key], sp_id), file=sys.stderr)
    return cfg, tensors, pieces, ids


# --------------------------------------------------------------------------------------------
# CTranslate2 specification


def build_spec(cfg, tensors, pieces, ids, add_source_eos=False):
    from ctranslate2.specs import common_spec, transformer_spec

    C = int(cfg["d_model"])
    encoder = transformer_spec.TransformerEncoderSpec(
        int(cfg["encoder_layers"]), int(cfg["encoder_attention_heads"]),
        pre_norm=False, activation=common_spec.Activation.RELU)
    decoder = transformer_spec.TransformerDecoderSpec(
        int(cfg["decoder_layers"]), int(cfg["decoder_attention_heads"]),
        pre_norm=False, activation=common_spec.Activation.RELU)
    spec = transformer_spec.TransformerSpec(encoder, decoder)

    def t(name):
        return tensors[name]

    def linear(lspec, prefix):
        lspec.weight = t(prefix + ".weight")
        lspec.bias = t(prefix + ".bias")

    def fused(lspec, prefix, parts):
        # CTranslate2 fuses projections that read the same input: [q;k;v] for self-attention,
        # [k;v] for cross-attention (rows concatenated in nn.Linear [out, in] layout).
        lspec.weight = np.concatenate([t("%s.%s_proj.weight" % (prefix, p)) for p in parts], axis=0)
        lspec.bias = np.concatenate([t("%s.%s_proj.bias" % (prefix, p)) for p in parts], axis=0)

    def layer_norm(nspec, prefix):
        nspec.gamma = t(prefix + ".weight")
        nspec.beta = t(prefix + ".bias")

    def ffn(fspec, prefix):
        linear(fspec.linear_0, prefix + ".fc1")
        linear(fspec.linear_1, prefix + ".fc2")
        layer_norm(fspec.layer_norm, prefix + ".final_layer_norm")

    shared = t("model.shared.weight")
    scale = math.sqrt(C)

    # Encoder. With pre_norm=False CTranslate2 applies each sublayer's layer_norm after the
    # residual addition: x = LN(x + Sublayer(x)), and there is no final encoder LayerNorm.
    encoder.embeddings[0].weight = shared
    encoder.scale_embeddings = scale
    encoder.position_encodings.encodings = t("model.encoder.embed_positions.weight")
    for i, lspec in enumerate(encoder.layer):
        p = "model.encoder.layers.%d" % i
        fused(lspec.self_attention.linear[0], p + ".self_attn", ("q", "k", "v"))
        linear(lspec.self_attention.linear[1], p + ".self_attn.out_proj")
        layer_norm(lspec.self_attention.layer_norm, p + ".self_attn_layer_norm")
        ffn(lspec.ffn, p)

    # Decoder.
    decoder.embeddings.weight = shared
    decoder.scale_embeddings = scale
    decoder.position_encodings.encodings = t("model.decoder.embed_positions.weight")
    for i, lspec in enumerate(decoder.layer):
        p = "model.decoder.layers.%d" % i
        fused(lspec.self_attention.linear[0], p + ".self_attn", ("q", "k", "v"))
        linear(lspec.self_attention.linear[1], p + ".self_attn.out_proj")
        layer_norm(lspec.self_attention.layer_norm, p + ".self_attn_layer_norm")
        fused(lspec.attention.linear[0], p + ".encoder_attn", ("q",))
        fused(lspec.attention.linear[1], p + ".encoder_attn", ("k", "v"))
        linear(lspec.attention.linear[2], p + ".encoder_attn.out_proj")
        layer_norm(lspec.attention.layer_norm, p + ".encoder_attn_layer_norm")
        ffn(lspec.ffn, p)

    # Tied output projection (same array as the embeddings; CTranslate2 saves it once as an
    # alias) plus final_logits_bias.
    decoder.projection.weight = shared
    decoder.projection.bias = np.ascontiguousarray(t("final_logits_bias").reshape(-1))

    spec.register_source_vocabulary(pieces)
    spec.register_target_vocabulary(pieces)

    config = spec.config
    config.unk_token = pieces[ids["unk_token_id"]]
    config.bos_token = pieces[ids["bos_token_id"]]
    config.eos_token = pieces[ids["eos_token_id"]]
    config.decoder_start_token = pieces[ids["decoder_start_token_id"]]
    config.add_source_bos = False
    config.add_source_eos = bool(add_source_eos)
    config.layer_norm_epsilon = 1e-5
    return spec


def convert(model_dir, out_dir, force=False, add_source_eos=False, quiet=False):
    """Converts model_dir into the CTranslate2 directory out_dir; returns out_dir."""
    if os.path.exists(out_dir) and os.listdir(out_dir):
        if not force:
            raise RuntimeError("output directory %s exists and is not empty (use --force)" % out_dir)
        shutil.rmtree(out_dir)
    cfg, tensors, pieces, ids = load_xlate_model(model_dir)
    spec = build_spec(cfg, tensors, pieces, ids, add_source_eos=add_source_eos)
    spec.validate()
    spec.optimize(quantization=None)  # no quantization: the weights stay float32
    os.makedirs(out_dir, exist_ok=True)
    spec.register_file(os.path.join(model_dir, "spm.model"), "spm.model")
    spec.save(out_dir)
    if not quiet:
        print("converted %s -> %s (vocab %d, d_model %s, layers %s+%s, heads %s/%s)"
              % (model_dir, out_dir, len(pieces), cfg["d_model"], cfg["encoder_layers"],
                 cfg["decoder_layers"], cfg["encoder_attention_heads"],
                 cfg["decoder_attention_heads"]), file=sys.stderr)
    return out_dir


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model_dir", required=True, help="xlate model directory")
    ap.add_argument("--out", required=True, help="CTranslate2 model directory to write")
    ap.add_argument("--force", action="store_true", help="replace a non-empty --out")
    ap.add_argument("--add_source_eos", action="store_true",
                    help="make CTranslate2 append EOS to every source sentence")
    args = ap.parse_args(argv)
    try:
        convert(args.model_dir, args.out, force=args.force, add_source_eos=args.add_source_eos)
    except ModelFormatError as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
