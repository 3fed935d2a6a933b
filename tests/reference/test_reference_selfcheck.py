"""Sanity checks of the numpy reference itself.

Run:  python3 tests/reference/test_reference_selfcheck.py
Prints "N passed, N failed" and exits nonzero if any check fails.
Needs tests/data/tiny_golden/ (python3 tests/reference/make_golden.py).
"""
import json
import os
import struct
import sys
import tempfile
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from transformer_reference import forward_logits, read_safetensors, write_safetensors  # noqa: E402

MODEL_DIR = os.path.join(HERE, "..", "data", "tiny_golden")


def load_model():
    with open(os.path.join(MODEL_DIR, "config.json")) as f:
        cfg = json.load(f)
    return cfg, read_safetensors(os.path.join(MODEL_DIR, "model.safetensors"))


def load_golden():
    with open(os.path.join(MODEL_DIR, "golden.json")) as f:
        return json.load(f)


def check_padding_invariance():
    """Each sentence alone gives the same logits as inside the padded batch."""
    cfg, w = load_model()
    g = load_golden()
    src, tgt = g["src"], g["tgt"]
    assert len({len(s) for s in src}) > 1 and len({len(t) for t in tgt}) > 1, "batch not ragged"
    batch = forward_logits(cfg, w, src, tgt)
    for b in range(len(src)):
        alone = forward_logits(cfg, w, [src[b]], [tgt[b]])[0]
        np.testing.assert_allclose(batch[b, : len(tgt[b])], alone, rtol=0, atol=1e-10)
    # padding must really be masked: the same sentence with unmasked extra
    # (non-pad) tokens appended must change the output
    longer = forward_logits(cfg, w, [src[2] + [7, 8, 9]], [tgt[2]])[0]
    alone = forward_logits(cfg, w, [src[2]], [tgt[2]])[0]
    assert np.abs(longer - alone).max() > 1e-3, "source tokens do not influence the output"


def check_causality():
    """Changing target token j leaves positions < j unchanged and changes position j."""
    cfg, w = load_model()
    g = load_golden()
    src, tgt = g["src"][1], g["tgt"][1]
    base = forward_logits(cfg, w, [src], [tgt])[0]
    for j in range(1, len(tgt)):
        changed = list(tgt)
        changed[j] = 4 + (changed[j] - 4 + 11) % (cfg["vocab_size"] - 4)
        out = forward_logits(cfg, w, [src], [changed])[0]
        np.testing.assert_allclose(out[:j], base[:j], rtol=0, atol=1e-12)
        assert np.abs(out[j:] - base[j:]).max() > 1e-3, f"position {j} ignores its own token"


def _write_raw(path, entries):
    """entries: list of (name, dtype, shape, raw bytes); written in order."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, dtype, shape, raw in entries:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for _, _, _, raw in entries:
            f.write(raw)


def check_safetensors_roundtrip():
    rng = np.random.default_rng(1)
    tensors = {"b.vec": rng.normal(size=7).astype(np.float32),
               "a.mat": rng.normal(size=(3, 5)).astype(np.float32),
               "c.scalar": np.array(2.5, dtype=np.float32)}
    with tempfile.TemporaryDirectory() as d:
        # F32 write -> read
        p = os.path.join(d, "f32.safetensors")
        write_safetensors(p, tensors)
        back = read_safetensors(p)
        assert set(back) == set(tensors)
        for k, v in tensors.items():
            assert back[k].dtype == np.float32 and back[k].shape == v.shape
            assert np.array_equal(back[k], v), k
        with open(p, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            hdr = json.loads(f.read(n))
        assert hdr["__metadata__"] == {"format": "pt"}
        names = [k for k in hdr if k != "__metadata__"]
        starts = [hdr[k]["data_offsets"][0] for k in names]
        assert sorted(names) == [k for _, k in sorted(zip(starts, names))], "data not in sorted-name order"

        # hand-written F16 and BF16 (and F32) tensors in one file
        f16_vals = np.array([[1.0, -2.5, 0.333251953125], [65504.0, 6.103515625e-05, 0.0]])
        f16_raw = f16_vals.astype("<f2").tobytes()
        # bf16 = top 16 bits of the f32 bit pattern (truncated here)
        bf16_vals = np.array([1.0, -3.140625, 1.5e10, 2.0 ** -100])
        bits = bf16_vals.astype("<f4").view("<u4")
        bf16_raw = (bits >> 16).astype("<u2").tobytes()
        bf16_expect = ((bits >> 16) << 16).astype("<u4").view("<f4")
        f32_vals = np.array([0.1, -7.0], dtype="<f4")
        p = os.path.join(d, "mixed.safetensors")
        _write_raw(p, [("h", "F16", [2, 3], f16_raw),
                       ("bf", "BF16", [4], bf16_raw),
                       ("f", "F32", [2], f32_vals.tobytes())])
        back = read_safetensors(p)
        assert back["h"].dtype == np.float32 and back["h"].shape == (2, 3)
        np.testing.assert_array_equal(back["h"], f16_vals.astype(np.float32))
        np.testing.assert_array_equal(back["bf"], bf16_expect)
        assert back["bf"][1] == np.float32(-3.140625) and back["bf"][0] == 1.0
        np.testing.assert_array_equal(back["f"], f32_vals)

        # explicit little-endian bit patterns, independent of numpy's casts
        p = os.path.join(d, "bits.safetensors")
        _write_raw(p, [("h", "F16", [2], bytes([0x00, 0x3C, 0x00, 0xC0])),      # 1.0, -2.0
                       ("bf", "BF16", [2], bytes([0x80, 0x3F, 0x49, 0x40]))])   # 1.0, 3.140625
        back = read_safetensors(p)
        assert back["h"].tolist() == [1.0, -2.0], back["h"]
        assert back["bf"].tolist() == [1.0, 3.140625], back["bf"]


def check_positional_table():
    """Stored tables equal PE(pos,2i)=sin(pos/10000^(2i/C)), PE(pos,2i+1)=cos(...)."""
    cfg, w = load_model()
    P, C = cfg["max_position_embeddings"], cfg["d_model"]
    expect = np.zeros((P, C))
    for pos in range(P):
        for i in range(C // 2):
            angle = pos / 10000 ** (2 * i / C)
            expect[pos, 2 * i] = np.sin(angle)
            expect[pos, 2 * i + 1] = np.cos(angle)
    for name in ("model.encoder.embed_positions.weight", "model.decoder.embed_positions.weight"):
        assert w[name].shape == (P, C), name
        np.testing.assert_allclose(w[name], expect, rtol=0, atol=1e-6, err_msg=name)


def check_golden_matches():
    """golden.json agrees with a fresh forward pass on the stored model."""
    cfg, w = load_model()
    g = load_golden()
    out = forward_logits(cfg, w, g["src"], g["tgt"])
    for b, rows in enumerate(g["logits"]):
        assert len(rows) == len(g["tgt"][b]) and all(len(r) == cfg["vocab_size"] for r in rows)
        np.testing.assert_allclose(np.array(rows), out[b, : len(rows)], rtol=1e-6, atol=1e-6)


CHECKS = [check_padding_invariance, check_causality, check_safetensors_roundtrip,
          check_positional_table, check_golden_matches]


def main():
    passed = failed = 0
    for check in CHECKS:
        try:
            check()
            print(f"PASS {check.__name__}")
            passed += 1
        except Exception:
            print(f"FAIL {check.__name__}")
            traceback.print_exc()
            failed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
