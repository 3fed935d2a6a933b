#!/usr/bin/env python3
"""Build tiny random Hugging Face M2M100 / NLLB models and reference outputs.

Usage:
    python3 tests/hf/make_m2m100_fixtures.py [OUTPUT_DIR] [--data-dir DIR]

OUTPUT_DIR defaults to tests/data/hf, DIR to /work/shared/data/multi30k (as for
make_marian_fixtures.py, whose helpers this script imports).

Both models are M2M100ForConditionalGeneration (model_type "m2m_100": pre-norm
layers, final encoder/decoder layer norms, fairseq sinusoidal positions with
offset 2, tied embeddings, no final_logits_bias); they differ in the tokenizer
family and the activation:

  OUTPUT_DIR/m2m100-relu/   M2M100Tokenizer: vocab.json (frequency-ordered, as
                            a fairseq dictionary) + sentencepiece.bpe.model, the
                            100 "m2m100" language tokens __xx__ after the
                            vocabulary, 8 unused "madeup" rows; relu
  OUTPUT_DIR/nllb-gelu/     NllbTokenizer (tokenizers-backed in transformers 5:
                            tokenizer.json) + sentencepiece.bpe.model: fairseq
                            id offset (spm id + 1), four language codes
                            (deu_Latn eng_Latn fra_Latn spa_Latn) after the
                            pieces, then <mask>, 2 unused rows; gelu
      config.json, generation_config.json, model.safetensors
          (model.save_pretrained(dir, safe_serialization=True))
      tokenizer files (tokenizer.save_pretrained(dir); for NLLB the
          sentencepiece.bpe.model is copied in as well, as a real download
          has it; transformers 5 does not write it)
      expected.json     greedy outputs of transformers' generate on 100
                        Multi30k test sentences en -> de (batch 1, float32)
  OUTPUT_DIR/m2m100_tokenizer_cases.json   encode/decode cases of both
                                            tokenizers
  OUTPUT_DIR/m2m100_save_report.json       stored tensor names/shapes,
                                            config.json, generation_config.json,
                                            tokenizer layout, position-table check

Choices, and why:
  * Language codes.  M2M100Tokenizer only knows two fixed lists
    (language_codes="m2m100": 100 codes, or "wmt21": 8 codes without fr); this
    uses "m2m100", the layout of facebook/m2m100_418M / 1.2B (id of __xx__ =
    len(vocab.json) + index in that list; 100 rows cost 13 KB).  The tokens
    are passed as additional_special_tokens, as the real special_tokens_map.json
    does: without that, transformers 5.24's M2M100Tokenizer does not register
    them as special (a chained comparison in its __init__ never appends them)
    and decode(skip_special_tokens=True) would keep "__de__" in the text.
    NllbTokenizer takes any list, so NLLB is cut to four codes, kept in the
    order of the real 202-code list.
  * vocab_size.  As in the real checkpoints: M2M100 len(vocab.json) + 100 +
    8 "madeupword" rows (128112 = 128004 + 100 + 8); NLLB len(tokenizer) + 2
    (256206 = 256204 + 2).  Those unused rows and the <pad> row are zero
    (their logits are exactly 0, so greedy decoding never picks them; the
    script asserts it): a generated <pad> would get the zero position vector
    and shift the positions of a full (uncached) decoder pass, see README.
  * SentencePiece.  One BPE model (a few hundred pieces, Multi30k en+de,
    single-threaded, fixed seed) shared by both.  Real NLLB/M2M100 models use
    nmt_nfkc, whose 240 KB table would dominate the fixtures; instead a small
    custom rule table (NBSP and U+3000 -> space, fullwidth ASCII -> ASCII,
    U+2026 -> "...") gives a precompiled charsmap of a few hundred bytes, so
    tokenizer.json gets the same normalizer structure as a real NLLB
    (Precompiled + Replace(" {2,}", " ")).
  * generation_config.json copies the real ones: facebook/m2m100_418M
    {bos 0, decoder_start 2, eos 2, pad 1, max_length 200, num_beams 5,
    early_stopping true}, facebook/nllb-200-distilled-600M {bos 0,
    decoder_start 2, eos 2, pad 1, max_length 200}.  Neither has
    forced_eos_token_id, bad_words_ids, no_repeat_ngram_size, min_length or a
    repetition penalty, and neither has forced_bos_token_id (it is passed per
    call), so with num_beams=1 the only logits processor generate applies is
    ForcedBOSTokenLogitsProcessor (first generated token := target language).
    The config.json values mirror the real ones too (dropouts, layerdrops,
    decoder_start_token_id 2, tokenizer_class "NllbTokenizer" for NLLB); the
    shape is tiny (d_model 32, 2+2 layers, 4 heads, ffn 64,
    max_position_embeddings 128).  The real NLLB models use relu; this one uses
    gelu to exercise it.

Determinism: as make_marian_fixtures.py (single-threaded spm with a fixed
seed, torch.manual_seed per model, one torch thread); expected outputs come
from the model and tokenizer reloaded from the written directory.  Each greedy
output is re-scored by a teacher-forced pass (float32 and float64) and must
match generate's log-probs to RESCORE_TOL_TOKEN per token (sums: n times).

Runs in about 15 seconds on one CPU core.
"""

import argparse
import collections
import copy
import io
import json
import math
import os
import shutil
import sys
import tempfile

import numpy as np
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as sp_pb2
import torch
import transformers
from transformers import (
    GenerationConfig,
    M2M100Config,
    M2M100ForConditionalGeneration,
    M2M100Tokenizer,
    NllbTokenizer,
)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_marian_fixtures import (  # noqa: E402
    DEFAULT_DATA,
    DEFAULT_OUT,
    EXTRA_NEW_TOKENS,
    NUM_SENTENCES,
    ODD_TEXTS,
    RESCORE_TOL_TOKEN,
    SPM_SEED,
    SPM_TRAIN_LINES,
    describe_saved,
    f32,
    read_lines,
    write_json,
)

SPM_VOCAB = 400
NUM_MADEUP_WORDS = 8  # M2M100: fairseq pads the dictionary with madeupword0000..7
NLLB_UNUSED_ROWS = 2  # NLLB: vocab_size = len(tokenizer) + 2, as 256206 = 256204 + 2
LANG_ROW_SCALE = 0.5
NLLB_LANGS = ["deu_Latn", "eng_Latn", "fra_Latn", "spa_Latn"]  # order of the real list
M2M_SRC, M2M_TGT = "en", "de"
NLLB_SRC, NLLB_TGT = "eng_Latn", "deu_Latn"

# (source code points, target code points), hex, the format of spm's
# normalization_rule_tsv; a tiny stand-in for nmt_nfkc
NORMALIZATION_RULES = (
    [("A0", "20"), ("3000", "20"), ("2026", "2E 2E 2E")]
    + [(f"{c:X}", f"{c - 0xFF01 + 0x21:X}") for c in range(0xFF01, 0xFF5F)]
)

# real generation_config.json contents (see the module docstring)
M2M100_GENERATION = dict(
    bos_token_id=0, decoder_start_token_id=2, eos_token_id=2, pad_token_id=1,
    max_length=200, num_beams=5, early_stopping=True,
)
NLLB_GENERATION = dict(
    bos_token_id=0, decoder_start_token_id=2, eos_token_id=2, pad_token_id=1, max_length=200,
)

# std_* as in make_marian_fixtures.py; out_scale: std of the (random-sign)
# weights of the decoder's final layer_norm, the logit scale; eos_bonus: the
# final layer_norm bias gets eos_bonus * E[</s>] / |E[</s>]|^2 added, which
# adds eos_bonus to the </s> logit (tied lm_head, no final_logits_bias in
# M2M100).  Tuned by hand so that outputs vary and a good share ends with
# </s> before the limit.  Small token embeddings (std_emb; they also set the
# logit scale, the lm_head being tied) keep the scaled token embedding from
# dominating the pre-norm residual stream.
MODELS = [
    dict(
        name="m2m100-relu",
        family="m2m100",
        activation="relu",
        seed=404,
        std_emb=0.1,
        std_qk=0.4,
        std_mat=0.5,
        out_scale=2.0,
        eos_bonus=2.6,
        layerdrop=0.05,
    ),
    dict(
        name="nllb-gelu",
        family="nllb",
        activation="gelu",
        seed=505,
        std_emb=0.1,
        std_qk=0.4,
        std_mat=0.3,
        out_scale=2.0,
        eos_bonus=2.8,
        layerdrop=0.0,
    ),
]


# --------------------------------------------------------------------------
# SentencePiece and tokenizers
# --------------------------------------------------------------------------


def train_bpe_spm(lines, path, rules_tsv):
    """BPE model with the spm defaults for special pieces (<unk> 0, <s> 1,
    </s> 2, as the real sentencepiece.bpe.model files) and a custom
    normalization rule table."""
    spm.set_random_generator_seed(SPM_SEED)
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=buf,
        model_type="bpe",
        vocab_size=SPM_VOCAB,
        hard_vocab_limit=False,
        character_coverage=1.0,
        normalization_rule_tsv=rules_tsv,
        unk_id=0,
        bos_id=1,
        eos_id=2,
        pad_id=-1,
        num_threads=1,
        minloglevel=2,
    )
    # the proto records the rule file's (temporary) path; drop it so that the
    # model file is reproducible (the rules themselves are compiled into
    # normalizer_spec.precompiled_charsmap)
    proto = sp_pb2.ModelProto()
    proto.ParseFromString(buf.getvalue())
    proto.normalizer_spec.ClearField("normalization_rule_tsv")
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())
    return spm.SentencePieceProcessor(model_file=path)


def fairseq_vocab(sp, corpus):
    """vocab.json of an M2M100 model: <s> 0, <pad> 1, </s> 2, <unk> 3, then the
    spm pieces by decreasing frequency in `corpus` (ties: spm id), as a
    fairseq dictionary; so vocab.json ids are *not* spm id + offset."""
    counts = collections.Counter()
    for line in corpus:
        counts.update(sp.encode(line))
    pieces = [i for i in range(sp.get_piece_size()) if not (sp.is_unknown(i) or sp.is_control(i))]
    pieces.sort(key=lambda i: (-counts[i], i))
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for i in pieces:
        vocab[sp.id_to_piece(i)] = len(vocab)
    return vocab


def m2m100_lang_tokens():
    from transformers.models.m2m_100.tokenization_m2m_100 import FAIRSEQ_LANGUAGE_CODES

    return [f"__{c}__" for c in FAIRSEQ_LANGUAGE_CODES["m2m100"]]


def make_m2m100_tokenizer(tmp, spm_path, vocab):
    vocab_path = os.path.join(tmp, "vocab.json")
    write_json(vocab, vocab_path, indent=2)
    return M2M100Tokenizer(
        vocab_file=vocab_path,
        spm_file=spm_path,
        src_lang=M2M_SRC,
        tgt_lang=M2M_TGT,
        language_codes="m2m100",
        additional_special_tokens=m2m100_lang_tokens(),
        model_max_length=1024,
    )


def make_nllb_tokenizer(tmp, spm_path, sp):
    """NllbTokenizer converted from the spm model by transformers itself, with
    the fairseq layout: specials 0-3, pieces (spm id + 1), language codes,
    <mask>.  The ids of the added tokens are given in added_tokens_decoder
    (as in a real tokenizer_config.json); without it transformers 5 puts
    <mask> before the language codes."""
    src = os.path.join(tmp, "nllb-src")
    os.makedirs(src)
    shutil.copy(spm_path, os.path.join(src, "sentencepiece.bpe.model"))
    first = sp.get_piece_size() + 1  # 4 specials + (size - 3) pieces
    added = {}
    for i, code in enumerate(NLLB_LANGS):
        added[str(first + i)] = dict(
            content=code, lstrip=False, normalized=False, rstrip=False, single_word=False, special=True
        )
    added[str(first + len(NLLB_LANGS))] = dict(
        content="<mask>", lstrip=True, normalized=True, rstrip=False, single_word=False, special=True
    )
    write_json(
        {
            "tokenizer_class": "NllbTokenizer",
            "additional_special_tokens": NLLB_LANGS,
            "added_tokens_decoder": added,
            "src_lang": NLLB_SRC,
            "tgt_lang": NLLB_TGT,
            "legacy_behaviour": False,
            "model_max_length": 1024,
        },
        os.path.join(src, "tokenizer_config.json"),
    )
    return NllbTokenizer.from_pretrained(src)


def load_tokenizer(family, model_dir, **kw):
    cls = M2M100Tokenizer if family == "m2m100" else NllbTokenizer
    return cls.from_pretrained(model_dir, **kw)


def lang_ids(family, tok):
    if family == "m2m100":
        return {c: tok.get_lang_id(c) for c in tok.lang_code_to_id}
    return {c: tok.convert_tokens_to_ids(c) for c in NLLB_LANGS}


# Reference tokenizers (what a C++ implementation built on the sentencepiece
# library does); compared with transformers on every case.


def spm_to_fairseq(spm_id):
    """NLLB: spm <unk> 0 -> 3, <s> 1 -> 0, </s> 2 -> 2, piece p -> p + 1."""
    return {0: 3, 1: 0, 2: 2}.get(spm_id, spm_id + 1)


def reference_encode(family, sp, vocab, lang_id, text):
    if family == "m2m100":
        body = [vocab.get(p, vocab["<unk>"]) for p in sp.encode(text, out_type=str)]
    else:
        body = [spm_to_fairseq(i) for i in sp.encode(text)]
    return [lang_id] + body + [2]


def reference_decode(family, id_to_piece, special_ids, ids):
    """decode(ids, skip_special_tokens=True) as the README describes it."""
    pieces = [id_to_piece[i] for i in ids if i not in special_ids and i in id_to_piece]
    text = "".join(pieces).replace("\u2581", " ")
    if family == "m2m100":
        return text.strip()  # spm decode + Python str.strip()
    return text[1:] if text.startswith(" ") else text  # Metaspace: one leading space


# --------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------


def make_config(spec, vocab_size):
    extra = {"tokenizer_class": "NllbTokenizer"} if spec["family"] == "nllb" else {}
    return M2M100Config(
        vocab_size=vocab_size,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=128,
        activation_function=spec["activation"],
        scale_embedding=True,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=2,
        dropout=0.1,
        attention_dropout=0.1,
        activation_dropout=0.0,
        encoder_layerdrop=spec["layerdrop"],
        decoder_layerdrop=spec["layerdrop"],
        init_std=0.02,
        tie_word_embeddings=True,
        architectures=["M2M100ForConditionalGeneration"],
        **extra,
    )


def randomize(model, spec, zero_rows, small_rows, eos_id):
    """Random values for every parameter; rows in zero_rows (<pad>, unused
    rows) of the shared embedding are zero, rows in small_rows (language
    tokens) scaled by LANG_ROW_SCALE so that their logits are small and greedy
    decoding seldom emits a language token (with 100 full-size language rows
    it did so at a quarter of all steps)."""
    torch.manual_seed(spec["seed"])
    with torch.no_grad():
        for name, p in model.named_parameters():  # tied tensors appear once
            if name == "model.shared.weight":
                p.normal_(0.0, spec["std_emb"])
            elif name.endswith(("q_proj.weight", "k_proj.weight")):
                p.normal_(0.0, spec["std_qk"])
            elif p.ndim >= 2:
                p.normal_(0.0, spec["std_mat"])
            elif "layer_norm.weight" in name:  # also encoder/decoder.layer_norm
                p.uniform_(0.6, 1.4)
            else:  # biases, layer-norm biases
                p.normal_(0.0, 0.3)
        emb = model.model.shared.weight
        emb[small_rows] *= LANG_ROW_SCALE
        emb[zero_rows] = 0.0
        # random signs for the output scale (see make_marian_fixtures.py)
        final = model.model.decoder.layer_norm
        final.weight.normal_(0.0, spec["out_scale"])
        e = emb[eos_id]
        final.bias += spec["eos_bonus"] * e / e.dot(e)


def position_tables(n, dim, padding_idx):
    """The fairseq sinusoid computed two ways (see README): "recipe": float32
    step, arguments, frequencies and angles as transformers computes them,
    exp/sin/cos evaluated in double and rounded to float32; "float64": all in
    double, rounded once at the end."""
    half = dim // 2
    step = np.float32(-(math.log(10000) / (half - 1)))
    arg = np.arange(half, dtype=np.float32) * step  # float32 products
    freq = np.exp(arg.astype(np.float64)).astype(np.float32)
    ang = np.arange(n, dtype=np.float32)[:, None] * freq[None, :]  # float32 products
    recipe = np.concatenate([np.sin(ang.astype(np.float64)), np.cos(ang.astype(np.float64))], axis=1)
    recipe = recipe.astype(np.float32)
    freq64 = np.exp(np.arange(half, dtype=np.float64) * -(math.log(10000) / (half - 1)))
    ang64 = np.arange(n, dtype=np.float64)[:, None] * freq64[None, :]
    t64 = np.concatenate([np.sin(ang64), np.cos(ang64)], axis=1).astype(np.float32)
    recipe[padding_idx] = 0.0
    t64[padding_idx] = 0.0
    return recipe, t64, freq


def check_positions(model, cfg):
    enc, dec = model.model.encoder.embed_positions, model.model.decoder.embed_positions
    assert torch.equal(enc.weights, dec.weights) and enc.offset == 2 and enc.padding_idx == cfg.pad_token_id
    table = enc.weights.numpy()
    n = cfg.max_position_embeddings + 2
    assert table.shape == (n, cfg.d_model), table.shape
    recipe, t64, freq = position_tables(n, cfg.d_model, cfg.pad_token_id)
    half = cfg.d_model // 2
    out = {
        "rows": n,
        "frequencies_float32": [f32(x) for x in freq],
        "recipe_max_abs_diff": float(np.abs(recipe - table).max()),
        "recipe_bit_identical_entries": int((recipe == table).sum()),
        "float64_max_abs_diff": float(np.abs(t64 - table).max()),
        "entries": int(table.size),
        "row_1_is_zero": bool((table[1] == 0).all()),
        "row_0_is_sin0_cos0": bool((table[0, :half] == 0).all() and (table[0, half:] == 1).all()),
    }
    # transformers' own frequencies (exp of the float32 products)
    ref_freq = torch.exp(torch.arange(half, dtype=torch.int64).float() * -(math.log(10000) / (half - 1)))
    out["frequencies_match_transformers"] = bool(np.array_equal(freq, ref_freq.numpy()))
    assert out["recipe_max_abs_diff"] <= 1.2e-7 and out["float64_max_abs_diff"] < 1e-5, out
    assert out["row_1_is_zero"] and out["row_0_is_sin0_cos0"]
    return out


def build_model(spec, out_dir, vocab_size, zero_rows, small_rows, eos_id, tokenizer, spm_path):
    model_dir = os.path.join(out_dir, spec["name"])
    if os.path.isdir(model_dir):
        shutil.rmtree(model_dir)
    os.makedirs(model_dir)

    cfg = make_config(spec, vocab_size)
    model = M2M100ForConditionalGeneration(cfg)
    model.eval()
    randomize(model, spec, zero_rows, small_rows, eos_id)

    # the in-memory model: tied embeddings, no embedding layer norm
    shared = model.model.shared.weight
    for other in (model.lm_head.weight, model.model.encoder.embed_tokens.weight,
                  model.model.decoder.embed_tokens.weight):
        assert other.data_ptr() == shared.data_ptr()
    assert not any("layernorm_embedding" in n for n, _ in model.named_parameters())
    assert model.model.encoder.embed_tokens.embed_scale == math.sqrt(32)
    act = model.model.encoder.layers[0].activation_fn
    x = torch.linspace(-4, 4, 81)
    if spec["activation"] == "gelu":
        assert type(act).__name__ == "GELUActivation"
        assert torch.equal(act(x), torch.nn.functional.gelu(x, approximate="none"))
    positions = check_positions(model, cfg)

    family = spec["family"]
    gen = M2M100_GENERATION if family == "m2m100" else NLLB_GENERATION
    model.generation_config = GenerationConfig(**gen)

    model.save_pretrained(model_dir, safe_serialization=True)
    tokenizer.save_pretrained(model_dir)
    spm_dest = os.path.join(model_dir, "sentencepiece.bpe.model")
    if not os.path.exists(spm_dest):  # NllbTokenizer (tokenizers backend) does not write it
        shutil.copy(spm_path, spm_dest)

    reloaded = M2M100ForConditionalGeneration.from_pretrained(model_dir)
    sd_a, sd_b = model.state_dict(), reloaded.state_dict()
    assert sd_a.keys() == sd_b.keys()
    for k in sd_a:
        assert torch.equal(sd_a[k], sd_b[k]), k
    return model_dir, positions


# --------------------------------------------------------------------------
# reference outputs
# --------------------------------------------------------------------------


def teacher_forced_log_probs(model, input_ids, dec_in, targets):
    """log_softmax (float64) of one full decoder pass; no logits processor."""
    with torch.no_grad():
        logits = model(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            decoder_input_ids=torch.tensor([dec_in]),
        ).logits[0]
    lp = torch.log_softmax(logits.double(), dim=-1)
    return [lp[t, tok].item() for t, tok in enumerate(targets)]


def generate_expected(model_dir, spec, sentences, zero_rows):
    family = spec["family"]
    src_lang, tgt_lang = (M2M_SRC, M2M_TGT) if family == "m2m100" else (NLLB_SRC, NLLB_TGT)
    tok = load_tokenizer(family, model_dir, src_lang=src_lang)
    model = M2M100ForConditionalGeneration.from_pretrained(model_dir, attn_implementation="eager")
    model.eval()
    assert model.dtype == torch.float32
    cfg = model.config
    eos_id, start_id = cfg.eos_token_id, cfg.decoder_start_token_id
    langs = lang_ids(family, tok)
    src_id, tgt_id = langs[src_lang], langs[tgt_lang]
    model64 = copy.deepcopy(model).double()

    source_ids, greedy = [], []
    n_eos_early = 0
    max_token_diff = max_token_diff64 = max_sum_diff = 0.0
    global_min_margin = float("inf")
    for text in sentences:
        ids = tok(text)["input_ids"]
        assert ids[0] == src_id and ids[-1] == eos_id and eos_id not in ids[:-1], ids
        source_ids.append(ids)
        input_ids = torch.tensor([ids])
        max_new = len(ids) - 1 + EXTRA_NEW_TOKENS
        with torch.no_grad():
            out = model.generate(
                input_ids,
                attention_mask=torch.ones_like(input_ids),
                num_beams=1,
                do_sample=False,
                forced_bos_token_id=tgt_id,
                max_new_tokens=max_new,
                output_scores=True,
                return_dict_in_generate=True,
            )
        seq = out.sequences[0].tolist()
        assert seq[0] == start_id and seq[1] == tgt_id, seq[:3]
        gen = seq[1:]  # forced language token first, decoder start left out
        assert len(gen) <= max_new and len(gen) == len(out.scores)
        assert not set(gen) & set(zero_rows), gen
        trans = model.compute_transition_scores(out.sequences, out.scores, normalize_logits=True)[0]
        token_lp = [float(x) for x in trans.tolist()]
        # step 0 is forced: every other logit is -inf, log-prob exactly 0
        assert token_lp[0] == 0.0 and torch.isinf(out.scores[0][0]).sum() == cfg.vocab_size - 1

        at_limit = len(gen) == max_new
        if gen[-1] == eos_id:
            assert eos_id not in gen[:-1]
            n_eos_early += 1
        else:
            assert at_limit and eos_id not in gen

        # teacher-forced re-scoring of the unforced steps 1..n-1
        dec_in = [start_id] + gen[:-1]
        tf = teacher_forced_log_probs(model, input_ids, dec_in, gen)
        tf64 = teacher_forced_log_probs(model64, input_ids, dec_in, gen)
        for a, a64, b in zip(tf[1:], tf64[1:], token_lp[1:]):
            max_token_diff = max(max_token_diff, abs(a - b))
            max_token_diff64 = max(max_token_diff64, abs(a64 - b))
            assert abs(a - b) < RESCORE_TOL_TOKEN and abs(a64 - b) < RESCORE_TOL_TOKEN, (a, a64, b, text)
        for scores in (tf, tf64):
            diff = abs(sum(scores[1:]) - sum(token_lp))
            max_sum_diff = max(max_sum_diff, diff)
            assert diff < RESCORE_TOL_TOKEN * max(1, len(gen) - 1), diff

        margins = []
        for step in range(1, len(gen)):
            s = out.scores[step][0]
            assert s.argmax().item() == gen[step]
            top2 = torch.topk(s, 2).values
            margins.append(float(top2[0] - top2[1]))
        min_margin = min(margins) if margins else None
        if min_margin is not None:
            global_min_margin = min(global_min_margin, min_margin)

        greedy.append(
            {
                "ids": gen,
                "text": tok.decode(gen, skip_special_tokens=True),
                "token_log_probs": [f32(x) for x in token_lp],
                "log_prob": sum(token_lp),
                "reached_max_new_tokens": at_limit,
                "min_top2_margin": min_margin,
            }
        )

    lengths = [len(g["ids"]) for g in greedy]
    print(
        f"  {spec['name']}: {n_eos_early}/{len(greedy)} end with </s> before the limit; "
        f"output lengths min {min(lengths)} max {max(lengths)} distinct {len(set(lengths))}; "
        f"distinct texts {len(set(g['text'] for g in greedy))}; "
        f"source lengths max {max(len(s) for s in source_ids)}\n"
        f"  teacher-forced re-scoring: max token diff {max_token_diff:.2e} (float64: {max_token_diff64:.2e}), "
        f"max sum diff {max_sum_diff:.2e}; smallest top-2 margin {global_min_margin:.2e}"
    )
    for g in greedy[:3]:
        print("   ", repr(g["text"][:100]), len(g["ids"]))
    gen_json = model.generation_config.to_diff_dict()
    return {
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "tokenizer_class": type(tok).__name__,
        "source_lang": src_lang,
        "target_lang": tgt_lang,
        "source_lang_id": src_id,
        "target_lang_id": tgt_id,
        "source_ids_layout": "[source language token] + pieces + [</s> = 2] "
        "(tokenizer(text)['input_ids'] with src_lang set)",
        "decoder_prefix": [start_id, tgt_id],
        "decoder_prefix_note": "decoding starts from decoder_start_token_id (</s> = 2); the first generated "
        "token is forced to the target language token (forced_bos_token_id), then free greedy steps",
        "ids_layout": "ids = generate's sequences[0][1:]: the decoder start token (2) is NOT included, the forced "
        "target language token IS (ids[0] == target_lang_id, token_log_probs[0] == 0.0); ids end with </s> "
        "(2) unless reached_max_new_tokens",
        "generation_settings": {
            "generation_config.json": gen_json,
            "logits_processors": "ForcedBOSTokenLogitsProcessor only (no forced_eos_token_id, bad_words_ids, "
            "no_repeat_ngram_size, min_length, repetition_penalty)",
            "forced_eos_token_id": None,
        },
        "sentences": sentences,
        "source_ids": source_ids,
        "greedy": greedy,
        "max_new_tokens_rule": "len(source_ids) - 1 + 50",
        "rescoring_check": {
            "max_token_abs_diff_float32_full_pass": max_token_diff,
            "max_token_abs_diff_float64_full_pass": max_token_diff64,
            "max_sum_abs_diff": max_sum_diff,
            "smallest_top2_margin": global_min_margin,
            "note": "steps 1.. re-scored by one teacher-forced pass with decoder_input_ids = [2] + ids[:-1], "
            "log_softmax of the raw logits; step 0 (forced) is left out",
        },
        "generate_call": (
            "model.generate(input_ids, attention_mask=ones, num_beams=1, do_sample=False, "
            "forced_bos_token_id=target_lang_id, max_new_tokens=len(source_ids) - 1 + 50, "
            "output_scores=True, return_dict_in_generate=True); "
            "token_log_probs = compute_transition_scores(sequences, scores, normalize_logits=True); "
            "text = tokenizer.decode(ids, skip_special_tokens=True); "
            "min_top2_margin: smallest gap between the best and second-best logit over the unforced steps"
        ),
    }


# --------------------------------------------------------------------------
# tokenizer cases
# --------------------------------------------------------------------------

EXTRA_TEXTS = [
    "trailing space ",
    " leading space",
    "a\u00a0non-breaking\u3000space",
    "emoji \U0001F600 here",
    "x <mask> y",
    "__de__ eng_Latn as text",
    "Straße, Mädchen, Jürgen",
]


def tokenizer_cases(family, model_dir, sp, test_lines, german_lines, seed, unused):
    """unused: ids of the unused embedding rows (>= len(tokenizer))."""
    src_lang, tgt_lang, other_lang = (
        (M2M_SRC, M2M_TGT, "fr") if family == "m2m100" else (NLLB_SRC, NLLB_TGT, "fra_Latn")
    )
    tok = load_tokenizer(family, model_dir, src_lang=src_lang, tgt_lang=tgt_lang)
    langs = lang_ids(family, tok)
    vocab = None
    if family == "m2m100":
        with open(os.path.join(model_dir, "vocab.json"), encoding="utf-8") as f:
            vocab = json.load(f)
    special_strings = set(tok.all_special_tokens)

    texts = test_lines[:12] + german_lines[:4] + ODD_TEXTS + EXTRA_TEXTS
    encode = []
    for t in texts:
        ids = tok(t)["input_ids"]
        ref = reference_encode(family, sp, vocab, langs[src_lang], t)
        encode.append(
            {
                "text": t,
                "input_ids": ids,
                "pieces": tok.tokenize(t),
                "reference_ids": ref,
                "matches_reference": ids == ref,
                "has_special_token_text": any(s in t for s in special_strings),
            }
        )
    # another source language: only the first id changes
    encode_other_src = []
    tok_o = load_tokenizer(family, model_dir, src_lang=other_lang)
    for t in test_lines[:3]:
        encode_other_src.append({"src_lang": other_lang, "text": t, "input_ids": tok_o(t)["input_ids"]})
    encode_target = []
    for t in german_lines[:4]:
        encode_target.append({"tgt_lang": tgt_lang, "text": t, "labels": tok(text_target=t)["input_ids"]})

    # decode cases; ids within the tokenizer's vocabulary (len(tok)), special
    # ids included; ids of the unused rows (>= len(tok)) go to quirks
    n_tok = len(tok)
    special_ids = set(tok.all_special_ids)
    id_to_piece = {}
    for i in range(n_tok):
        id_to_piece[i] = tok.convert_ids_to_tokens(i)
    rng = np.random.RandomState(seed)
    id_lists = [e["labels"] for e in encode_target] + [e["input_ids"] for e in encode[:4]]
    for _ in range(10):
        n = int(rng.randint(1, 15))
        id_lists.append([int(x) for x in rng.randint(0, n_tok, size=n)])
    fixed = sorted(set(langs.values()))[:3]
    id_lists += [[3, 10, 11, 2], [10, 2, 2, 11], [0, 10, 1, 11, 2], [], [2], [fixed[0], 10, 11, 2]]
    id_lists += [[10, fixed[1], 11, fixed[2], 12]]
    if family == "nllb":
        id_lists.append([10, tok.convert_tokens_to_ids("<mask>"), 11])
    decode = []
    for ids in id_lists:
        text = tok.decode(ids, skip_special_tokens=True)
        assert text == reference_decode(family, id_to_piece, special_ids, ids), (ids, text)
        decode.append(
            {"ids": ids, "text": text, "text_keep_special": tok.decode(ids, skip_special_tokens=False)}
        )
    # the reference decoder against transformers on many random lists
    n_checked = 0
    for _ in range(3000):
        n = int(rng.randint(0, 20))
        ids = [int(x) for x in rng.randint(0, n_tok, size=n)]
        assert tok.decode(ids, skip_special_tokens=True) == reference_decode(
            family, id_to_piece, special_ids, ids
        ), ids
        n_checked += 1
    quirks = []
    for ids in ([10, unused[0], 11], [unused[-1]]):
        quirks.append(
            {
                "ids": ids,
                "text": tok.decode(ids, skip_special_tokens=True),
                "text_keep_special": tok.decode(ids, skip_special_tokens=False),
                "why": "ids of unused embedding rows (>= len(tokenizer)); never generated (zero rows)",
            }
        )
    return {
        "transformers_version": transformers.__version__,
        "tokenizer_class": type(tok).__name__,
        "len_tokenizer": n_tok,
        "src_lang": src_lang,
        "tgt_lang": tgt_lang,
        "language_ids": langs,
        "special_ids": sorted(special_ids),
        "note": "input_ids = tokenizer(text)['input_ids'] with src_lang set; pieces = tokenizer.tokenize(text); "
        "reference_ids: the sentencepiece library's encode mapped to model ids (README), matches_reference "
        "says whether transformers agrees; has_special_token_text: the text holds a special token's string, "
        "which transformers matches as that token; labels = tokenizer(text_target=text)['input_ids'] with "
        "tgt_lang set; text = decode(ids, skip_special_tokens=True) (the README's rule reproduced it on "
        f"{n_checked} random id lists), text_keep_special = decode(ids, skip_special_tokens=False)",
        "encode": encode,
        "encode_other_src_lang": encode_other_src,
        "encode_target": encode_target,
        "decode": decode,
        "decode_quirks": quirks,
    }


# --------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("output_dir", nargs="?", default=DEFAULT_OUT, help="default: %(default)s")
    ap.add_argument("--data-dir", default=DEFAULT_DATA)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    transformers.logging.set_verbosity_error()

    out_dir = os.path.abspath(args.output_dir)
    os.makedirs(out_dir, exist_ok=True)
    data = args.data_dir
    train_en = read_lines(os.path.join(data, "train.en.gz"), SPM_TRAIN_LINES)
    train_de = read_lines(os.path.join(data, "train.de.gz"), SPM_TRAIN_LINES)
    train = [s for pair in zip(train_en, train_de) for s in pair]
    test_en = read_lines(os.path.join(data, "test_2016_flickr.en.gz"))
    test_de = read_lines(os.path.join(data, "test_2016_flickr.de.gz"), 8)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, sentencepiece {spm.__version__}")

    report, all_cases = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        rules = os.path.join(tmp, "rules.tsv")
        with open(rules, "w", encoding="utf-8") as f:
            f.writelines(f"{a}\t{b}\n" for a, b in NORMALIZATION_RULES)
        spm_path = os.path.join(tmp, "sentencepiece.bpe.model")
        sp = train_bpe_spm(train, spm_path, rules)
        print(f"spm: {sp.get_piece_size()} pieces, {os.path.getsize(spm_path)} bytes")

        for spec in MODELS:
            family = spec["family"]
            if family == "m2m100":
                vocab = fairseq_vocab(sp, train)
                tok = make_m2m100_tokenizer(tmp, spm_path, vocab)
                vocab_size = len(vocab) + len(tok.lang_code_to_id) + NUM_MADEUP_WORDS
                zero_rows = [1] + list(range(vocab_size - NUM_MADEUP_WORDS, vocab_size))
            else:
                tok = make_nllb_tokenizer(tmp, spm_path, sp)
                vocab_size = len(tok) + NLLB_UNUSED_ROWS
                zero_rows = [1] + list(range(len(tok), vocab_size))
            langs = lang_ids(family, tok)
            print(f"{spec['name']}: len(tokenizer) {len(tok)}, vocab_size {vocab_size}, "
                  f"languages {len(langs)} ({min(langs.values())}..{max(langs.values())})")
            small_rows = sorted(langs.values())
            model_dir, positions = build_model(spec, out_dir, vocab_size, zero_rows, small_rows, 2, tok, spm_path)

            tensors, meta = describe_saved(model_dir)
            with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
                config_json = json.load(f)
            with open(os.path.join(model_dir, "generation_config.json"), encoding="utf-8") as f:
                gen_json = json.load(f)
            reloaded = load_tokenizer(family, model_dir)
            report[spec["name"]] = {
                "files": {fn: os.path.getsize(os.path.join(model_dir, fn)) for fn in sorted(os.listdir(model_dir))},
                "safetensors_metadata": meta,
                "tensors": tensors,
                "config.json": config_json,
                "generation_config.json": gen_json,
                "tokenizer": {
                    "class": type(reloaded).__name__,
                    "len": len(reloaded),
                    "special_ids": {
                        t: reloaded.convert_tokens_to_ids(t) for t in ("<s>", "<pad>", "</s>", "<unk>")
                    },
                    "mask_id": reloaded.convert_tokens_to_ids("<mask>") if family == "nllb" else None,
                    "language_ids": lang_ids(family, reloaded),
                    "zero_embedding_rows": zero_rows,
                },
                "positions": positions,
            }
            print(f"  files {report[spec['name']]['files']}")
            print(f"  {len(tensors)} stored tensors, those outside the layers: "
                  f"{ {k: v['shape'] for k, v in tensors.items() if '.layers.' not in k} }")
            print(f"  positions: {positions}")

            sentences = test_en[:NUM_SENTENCES]
            expected = generate_expected(model_dir, spec, sentences, zero_rows)
            write_json(expected, os.path.join(model_dir, "expected.json"))
            all_cases[spec["name"]] = tokenizer_cases(
                family, model_dir, sp, test_en[NUM_SENTENCES:], test_de, spec["seed"], zero_rows[1:]
            )
            bad = [c["text"] for c in all_cases[spec["name"]]["encode"] if not c["matches_reference"]]
            print(f"  encode cases differing from the spm reference: {bad}")

    write_json(all_cases, os.path.join(out_dir, "m2m100_tokenizer_cases.json"))
    write_json(report, os.path.join(out_dir, "m2m100_save_report.json"), indent=1)

    total = 0
    for name in [s["name"] for s in MODELS]:
        d = os.path.join(out_dir, name)
        size = sum(os.path.getsize(os.path.join(d, fn)) for fn in os.listdir(d))
        print(f"{name}: {size} bytes")
        total += size
    for fn in ("m2m100_tokenizer_cases.json", "m2m100_save_report.json"):
        total += os.path.getsize(os.path.join(out_dir, fn))
    print(f"total size of the M2M100 fixtures: {total} bytes")


if __name__ == "__main__":
    sys.exit(main())
