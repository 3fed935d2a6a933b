#!/usr/bin/env python3
"""Build tiny random Hugging Face Marian (OPUS-MT style) models and reference outputs.

Usage:
    python3 tests/hf/make_marian_fixtures.py [OUTPUT_DIR] [--data-dir DIR]

OUTPUT_DIR defaults to tests/data/hf (relative to the repository root), DIR to
/work/shared/data/multi30k (it must hold train.en.gz, train.de.gz and
test_2016_flickr.en.gz and test_2016_flickr.de.gz, one sentence per line).

What it writes, everything produced by transformers itself so that the C++
loader can be checked against it without torch:

  OUTPUT_DIR/marian-relu-tied/          shared vocabulary, tied embeddings, relu
  OUTPUT_DIR/marian-swish-separate/     separate source/target vocabularies and
                                        embeddings, untied lm_head, swish
  OUTPUT_DIR/marian-gelu-multilingual/  shared vocabulary with >>xxx<< language
                                        tokens, tied embeddings, gelu
      config.json, generation_config.json, model.safetensors
          (MarianMTModel.save_pretrained(dir, safe_serialization=True))
      source.spm, target.spm, vocab.json [, target_vocab.json],
      tokenizer_config.json
          (MarianTokenizer.save_pretrained(dir))
      expected.json     greedy outputs of transformers' generate on 100
                        Multi30k test sentences (batch 1, float32)
  OUTPUT_DIR/tokenizer_cases.json   encode/decode cases of the relu-tied and
                                    swish-separate tokenizers
  OUTPUT_DIR/save_report.json       what save_pretrained stored (tensor names,
                                    shapes), config.json / generation config

The script is deterministic: SentencePiece training runs single-threaded with a
fixed seed, every model is randomised after torch.manual_seed(<fixed seed>),
and torch runs with one thread.  The reference outputs are produced by the
model and tokenizer *reloaded from the written directory* (from_pretrained), so
what is on disk is exactly what produced them.  Every greedy output is
re-scored with a teacher-forced forward pass (float32 and float64; log_softmax
of the logits with the <pad> logit at -inf) and must agree with generate's
log-probs to RESCORE_TOL_TOKEN per token and n * RESCORE_TOL_TOKEN for the sum
of n tokens (asserted; the measured maxima are stored in expected.json).

Runs in about half a minute on one CPU core.
"""

import argparse
import copy
import gzip
import io
import json
import math
import os
import shutil
import sys
import tempfile

import numpy as np
import sentencepiece as spm
import torch
import transformers
from safetensors import safe_open
from transformers import GenerationConfig, MarianConfig, MarianMTModel, MarianTokenizer

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_OUT = os.path.join(REPO_ROOT, "tests", "data", "hf")
DEFAULT_DATA = "/work/shared/data/multi30k"

SPM_TRAIN_LINES = 20000
SRC_SPM_VOCAB = 300  # English; larger than the German one (see the separate model)
TGT_SPM_VOCAB = 250  # German
SPM_SEED = 1234
# OPUS-MT's spm models use nmt_nfkc; its precompiled normalisation table
# makes every .spm file ~240 KB, six of them would be 1.4 MB.  "identity"
# keeps the files a few KB (whitespace handling is unchanged: leading,
# trailing and repeated spaces are still removed, a dummy prefix added).
SPM_NORMALIZATION = "identity"
NUM_SENTENCES = 100
EXTRA_NEW_TOKENS = 50  # max_new_tokens = len(source_ids) - 1 + EXTRA_NEW_TOKENS
LANG_TOKENS = [">>deu<<", ">>fra<<", ">>spa<<"]
# OPUS-MT's config.json / generation_config.json have forced_eos_token_id 0
# (MarianConfig's default too): ForcedEOSTokenLogitsProcessor then makes the
# last token allowed by the length limit </s> (processed log-prob 0.0).  These
# fixtures switch it off (None) so that an output cut by the limit simply
# ends without </s>; set it to 0 to get OPUS-MT's behaviour (the checks below
# handle both).
FORCED_EOS_TOKEN_ID = None
# Tolerance of the re-scoring check per token; a sum of n log-probs may
# differ by n times as much.  The differences are float32 rounding
# (generate's cached incremental decoding vs one full teacher-forced pass, or
# vs the same pass in float64): about 1e-5 per token, and up to ~4e-4 for
# the sum of a 100-token output (sharper attention, std_qk 0.7, gave ten
# times more).  The measured maxima are written to expected.json.
RESCORE_TOL_TOKEN = 5e-5

# Per-model settings.  std_* are the standard deviations of the random normal
# values given to the parameters: token embeddings (std_emb), attention query
# and key projections (std_qk, larger than the rest so that attention is
# sharp enough for the decoder to move over the source instead of settling
# into a fixed point; much sharper makes float32 rounding noise large), the
# other matrices (std_mat), the separate lm_head (std_head); out_scale is the
# std of the decoder's last layer-norm weights (the logit scale); eos_bonus is
# added to final_logits_bias[</s>].  Tuned by hand so that greedy decoding
# gives varied outputs and a good share ends with </s> before the limit.
MODELS = [
    dict(
        name="marian-relu-tied",
        activation="relu",
        separate=False,
        lang_tokens=False,
        source_prefix="",
        seed=101,
        std_emb=0.3,
        std_qk=0.4,
        std_mat=0.2,
        std_head=None,
        out_scale=2.0,
        eos_bonus=7.5,
    ),
    dict(
        name="marian-swish-separate",
        activation="swish",
        separate=True,
        lang_tokens=False,
        source_prefix="",
        seed=202,
        std_emb=0.3,
        std_qk=0.4,
        std_mat=0.2,
        std_head=0.35,
        out_scale=2.0,
        eos_bonus=7.5,
    ),
    dict(
        name="marian-gelu-multilingual",
        activation="gelu",
        separate=False,
        lang_tokens=True,
        source_prefix=">>deu<< ",
        seed=303,
        std_emb=0.3,
        std_qk=0.4,
        std_mat=0.2,
        std_head=None,
        out_scale=2.0,
        eos_bonus=7.0,
    ),
]


# --------------------------------------------------------------------------
# data and tokenizers
# --------------------------------------------------------------------------


def read_lines(path, limit=None):
    """First `limit` lines of a gzip text file, newline stripped."""
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            out.append(line.rstrip("\n"))
            if limit is not None and len(out) >= limit:
                break
    return out


def train_spm(lines, vocab_size, path, normalization):
    """Train a unigram SentencePiece model on `lines` and write it to `path`.

    Only <unk> (id 0) is a special piece: no <s>, </s> or <pad> pieces, since
    MarianTokenizer uses the spm model only to cut text into pieces and maps
    the pieces to ids through vocab.json.
    """
    spm.set_random_generator_seed(SPM_SEED)
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=buf,
        model_type="unigram",
        vocab_size=vocab_size,
        hard_vocab_limit=False,
        character_coverage=1.0,
        normalization_rule_name=normalization,
        unk_id=0,
        bos_id=-1,
        eos_id=-1,
        pad_id=-1,
        num_threads=1,
        minloglevel=2,
    )
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    return spm.SentencePieceProcessor(model_file=path)


def normal_pieces(sp):
    """Pieces of an spm model that are neither unknown nor control pieces."""
    return [
        sp.id_to_piece(i)
        for i in range(sp.get_piece_size())
        if not (sp.is_unknown(i) or sp.is_control(i))
    ]


def marian_vocab(piece_lists, extra=()):
    """OPUS-MT style vocabulary: </s> 0, <unk> 1, pieces (union, first seen
    order), `extra` tokens, <pad> last."""
    vocab = {"</s>": 0, "<unk>": 1}
    for pieces in piece_lists:
        for p in pieces:
            if p not in vocab:
                vocab[p] = len(vocab)
    for t in extra:
        assert t not in vocab, t
        vocab[t] = len(vocab)
    vocab["<pad>"] = len(vocab)
    return vocab


def f32(x):
    """A float32 value as the shortest decimal that reads back to the same
    float32 (keeps the JSON small and loses nothing for float32 readers)."""
    v = float(str(np.float32(x)))
    assert np.float32(v) == np.float32(x)
    return v


def write_json(obj, path, indent=None):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=indent)
        f.write("\n")


# --------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------


def make_config(spec, src_vocab_size, tgt_vocab_size, pad_id):
    shared = not spec["separate"]
    return MarianConfig(
        vocab_size=src_vocab_size,
        decoder_vocab_size=tgt_vocab_size,
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
        # not fields of MarianConfig in recent transformers; kept as extra keys
        # in config.json because OPUS-MT config.json files carry them
        normalize_before=False,
        static_position_embeddings=True,
        pad_token_id=pad_id,
        decoder_start_token_id=pad_id,
        eos_token_id=0,
        forced_eos_token_id=FORCED_EOS_TOKEN_ID,
        share_encoder_decoder_embeddings=shared,
        tie_word_embeddings=shared,
        dropout=0.1,
        attention_dropout=0.0,
        activation_dropout=0.0,
        architectures=["MarianMTModel"],
    )


def randomize(model, spec, eos_id):
    """Give every parameter and final_logits_bias random values."""
    torch.manual_seed(spec["seed"])
    with torch.no_grad():
        for name, p in model.named_parameters():  # tied tensors appear once
            if "embed_positions" in name:
                continue  # fixed sinusoid table, not a learned parameter
            if name.endswith("embed_tokens.weight") or name == "model.shared.weight":
                p.normal_(0.0, spec["std_emb"])
            elif name == "lm_head.weight":
                p.normal_(0.0, spec["std_head"])
            elif name.endswith(("q_proj.weight", "k_proj.weight")):
                p.normal_(0.0, spec["std_qk"])  # sharp attention patterns
            elif p.ndim >= 2:
                p.normal_(0.0, spec["std_mat"])
            elif "layer_norm.weight" in name:
                p.uniform_(0.6, 1.4)
            else:  # biases, layer-norm biases
                p.normal_(0.0, 0.3)
        # The decoder's last layer norm sets the scale of the logits.  Its
        # weights get random signs: with tied embeddings and all-positive
        # weights the output is aligned with the input token's embedding and
        # greedy decoding just repeats one token.
        model.model.decoder.layers[-1].final_layer_norm.weight.normal_(0.0, spec["out_scale"])
        bias = model.final_logits_bias
        bias.normal_(0.0, 1.0)
        bias[0, eos_id] += spec["eos_bonus"]


def sinusoid_table(n_pos, dim):
    """Reference formula (see README): float64, then float32."""
    table = np.zeros((n_pos, dim))
    half = dim // 2
    for pos in range(n_pos):
        for i in range(half):
            angle = pos / np.power(10000.0, 2 * i / dim)
            table[pos, i] = math.sin(angle)
            table[pos, half + i] = math.cos(angle)
    return torch.tensor(table, dtype=torch.float32)


# --------------------------------------------------------------------------
# reference outputs
# --------------------------------------------------------------------------


def teacher_forced_log_probs(model, input_ids, gen_ids, start_id, pad_id):
    """Per-token log-probs of gen_ids, log_softmax over logits with the <pad>
    logit set to -inf (the effect of bad_words_ids=[[pad]])."""
    dec_in = torch.tensor([[start_id] + gen_ids[:-1]])
    with torch.no_grad():
        logits = model(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            decoder_input_ids=dec_in,
        ).logits[0]
    logits[:, pad_id] = -float("inf")
    lp = torch.log_softmax(logits.double(), dim=-1)
    return [lp[t, tok].item() for t, tok in enumerate(gen_ids)]


def generate_expected(model_dir, spec, sentences):
    tok = MarianTokenizer.from_pretrained(model_dir)
    model = MarianMTModel.from_pretrained(model_dir, attn_implementation="eager")
    model.eval()
    assert model.dtype == torch.float32
    cfg = model.config
    gen_cfg = model.generation_config
    pad_id, eos_id, start_id = cfg.pad_token_id, cfg.eos_token_id, cfg.decoder_start_token_id
    assert gen_cfg.bad_words_ids == [[pad_id]], gen_cfg.bad_words_ids

    source_ids, greedy = [], []
    n_eos_early = 0
    max_token_diff = max_sum_diff = max_token_diff64 = 0.0
    model64 = copy.deepcopy(model).double()
    global_min_margin = float("inf")
    for text in sentences:
        ids = tok(text)["input_ids"]
        assert ids[-1] == tok.eos_token_id == eos_id
        source_ids.append(ids)
        input_ids = torch.tensor([ids])
        max_new = len(ids) - 1 + EXTRA_NEW_TOKENS
        with torch.no_grad():
            out = model.generate(
                input_ids,
                attention_mask=torch.ones_like(input_ids),
                num_beams=1,
                do_sample=False,
                max_new_tokens=max_new,
                output_scores=True,
                return_dict_in_generate=True,
            )
        seq = out.sequences[0].tolist()
        assert seq[0] == start_id
        gen = seq[1:]
        assert len(gen) <= max_new and len(gen) == len(out.scores)
        assert pad_id not in gen
        # Per-token log-probs: log_softmax over the processed scores (the
        # <pad> logit is -inf there because of bad_words_ids), in float32,
        # which is what compute_transition_scores(normalize_logits=True)
        # does.  compute_transition_scores itself reshapes the scores with
        # config.vocab_size (the *source* vocabulary size), so it fails (or,
        # if the sizes happen to divide, silently mixes rows) when
        # decoder_vocab_size != vocab_size; use it only as a cross-check for
        # the shared-vocabulary models.
        token_lp = []
        for step, s in enumerate(out.scores):
            assert s.shape == (1, cfg.decoder_vocab_size)
            assert torch.isinf(s[0, pad_id]) and s[0, pad_id] < 0
            token_lp.append(float(torch.log_softmax(s[0], dim=-1)[gen[step]].item()))
        if cfg.vocab_size == cfg.decoder_vocab_size:
            trans = model.compute_transition_scores(out.sequences, out.scores, normalize_logits=True)[0]
            trans = [float(x) for x in trans.tolist()]
            assert max(abs(a - b) for a, b in zip(trans, token_lp)) < 1e-5
            token_lp = trans

        # With forced_eos_token_id set, ForcedEOSTokenLogitsProcessor forces
        # </s> as the last allowed token: its processed log-prob is exactly 0.
        at_limit = len(gen) == max_new
        forced = at_limit and gen_cfg.forced_eos_token_id is not None
        if forced:
            assert gen[-1] == eos_id and token_lp[-1] == 0.0
        elif gen[-1] == eos_id:
            assert eos_id not in gen[:-1]
            n_eos_early += 1
        else:
            assert at_limit and eos_id not in gen

        # re-score with a teacher-forced forward pass, in float32 (as
        # generate ran) and in float64 (to see the float32 rounding noise)
        tf = teacher_forced_log_probs(model, input_ids, gen, start_id, pad_id)
        tf64 = teacher_forced_log_probs(model64, input_ids, gen, start_id, pad_id)
        n_check = len(gen) - 1 if forced else len(gen)
        for a, a64, b in zip(tf[:n_check], tf64[:n_check], token_lp[:n_check]):
            max_token_diff = max(max_token_diff, abs(a - b))
            max_token_diff64 = max(max_token_diff64, abs(a64 - b))
            assert abs(a - b) < RESCORE_TOL_TOKEN and abs(a64 - b) < RESCORE_TOL_TOKEN, (a, a64, b, text)
        # (a forced last </s> has processed log-prob 0 in both)
        for scores in (tf, tf64):
            tf_sum = sum(scores[:n_check]) + (token_lp[-1] if forced else 0.0)
            max_sum_diff = max(max_sum_diff, abs(tf_sum - sum(token_lp)))
            assert abs(tf_sum - sum(token_lp)) < RESCORE_TOL_TOKEN * max(1, n_check), (tf_sum, sum(token_lp))

        # distance between the best and the second-best processed score at
        # each (not forced) step: where it is tiny, an implementation with
        # different float32 rounding may legitimately pick another token
        margins = []
        for step in range(n_check):
            top2 = torch.topk(out.scores[step][0], 2).values
            assert out.scores[step][0].argmax().item() == gen[step]
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
        f"max sum diff {max_sum_diff:.2e}; "
        f"smallest top-2 margin {global_min_margin:.2e}"
    )
    for g in greedy[:3]:
        print("   ", repr(g["text"][:100]), len(g["ids"]))
    return {
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "source_prefix": spec["source_prefix"],
        "sentences": sentences,
        "source_ids": source_ids,
        "greedy": greedy,
        "max_new_tokens_rule": "len(source_ids) - 1 + 50",
        "rescoring_check": {
            "max_token_abs_diff_float32_full_pass": max_token_diff,
            "max_token_abs_diff_float64_full_pass": max_token_diff64,
            "max_sum_abs_diff": max_sum_diff,
            "smallest_top2_margin": global_min_margin,
        },
        "generate_call": (
            "model.generate(input_ids, attention_mask=ones, num_beams=1, do_sample=False, "
            "max_new_tokens=len(source_ids) - 1 + 50, output_scores=True, return_dict_in_generate=True); "
            "token_log_probs = compute_transition_scores(sequences, scores, normalize_logits=True); "
            "ids end with </s> (0) unless the output reached max_new_tokens (reached_max_new_tokens); "
            "min_top2_margin: smallest gap between the best and second-best processed logit over the steps"
        ),
    }


def describe_saved(model_dir):
    """Tensor names/shapes/dtypes stored in model.safetensors."""
    out = {}
    with safe_open(os.path.join(model_dir, "model.safetensors"), framework="pt") as f:
        meta = f.metadata()
        for k in sorted(f.keys()):
            t = f.get_slice(k)
            out[k] = {"shape": list(t.get_shape()), "dtype": t.get_dtype()}
    return out, meta


def build_model(spec, out_dir, src_vocab_size, tgt_vocab_size, pad_id, eos_id, tokenizer):
    model_dir = os.path.join(out_dir, spec["name"])
    if os.path.isdir(model_dir):
        shutil.rmtree(model_dir)
    os.makedirs(model_dir)

    cfg = make_config(spec, src_vocab_size, tgt_vocab_size, pad_id)
    model = MarianMTModel(cfg)
    model.eval()
    randomize(model, spec, eos_id)

    # sanity checks on the in-memory model
    shared = not spec["separate"]
    if shared:
        assert model.lm_head.weight.data_ptr() == model.model.shared.weight.data_ptr()
        assert model.model.encoder.embed_tokens.weight.data_ptr() == model.model.shared.weight.data_ptr()
        assert model.model.decoder.embed_tokens.weight.data_ptr() == model.model.shared.weight.data_ptr()
    else:
        assert model.lm_head.weight.data_ptr() != model.model.decoder.embed_tokens.weight.data_ptr()
        assert model.model.encoder.embed_tokens.weight.shape[0] == src_vocab_size
        assert model.model.decoder.embed_tokens.weight.shape[0] == tgt_vocab_size
    assert model.lm_head.weight.shape[0] == tgt_vocab_size
    table = sinusoid_table(128, 32)
    for part in (model.model.encoder, model.model.decoder):
        assert torch.equal(part.embed_positions.weight, table)  # bit-identical

    gen_cfg = GenerationConfig.from_model_config(model.config)
    gen_cfg.bad_words_ids = [[pad_id]]
    gen_cfg.num_beams = 1
    gen_cfg.max_length = 128
    model.generation_config = gen_cfg

    model.save_pretrained(model_dir, safe_serialization=True)
    tokenizer.save_pretrained(model_dir)

    # the directory alone must reproduce the model
    reloaded = MarianMTModel.from_pretrained(model_dir)
    sd_a, sd_b = model.state_dict(), reloaded.state_dict()
    assert sd_a.keys() == sd_b.keys()
    for k in sd_a:
        assert torch.equal(sd_a[k], sd_b[k]), k
    return model_dir


# --------------------------------------------------------------------------
# tokenizer cases
# --------------------------------------------------------------------------

TOKENIZER_CASE_MODELS = ("marian-relu-tied", "marian-swish-separate")

ODD_TEXTS = [
    "",
    " ",
    "ÆØÅ ☃",
    "A man with 3 dogs and 12,345 cats in 2016.",
    "  Two   spaces  and\ttabs\there  ",
    "Ein Mann mit einem orangefarbenen Hut.",
    "naïve café – “quoted” … ok?",
    "ＦＵＬＬＷＩＤＴＨ ｔｅｘｔ",
    "a </s> in the middle",
    "an <unk> and <pad> literally",
    ">>deu<< with a language code",
    "text with >>fra<< in the middle",
    "UPPER CASE SENTENCE!!!",
    "x",
]


def tokenizer_cases(model_dir, test_lines, german_lines, n_decode_random, seed):
    tok = MarianTokenizer.from_pretrained(model_dir)
    texts = test_lines[:16] + ODD_TEXTS
    assert len(texts) == 30
    encode = []
    for t in texts:
        encode.append(
            {
                "text": t,
                "input_ids": tok(t)["input_ids"],
                "pieces": tok.tokenize(t),
            }
        )
    # target side (text_target=...) encodings of German sentences
    encode_target = []
    for t in german_lines[:8] + ["Schöne Grüße ☃", ""]:
        encode_target.append({"text": t, "labels": tok(text_target=t)["input_ids"]})

    # decode cases: target encodings of German text, random id lists over
    # the target vocabulary (</s> and <unk> included, <pad> -- the last id --
    # left out), and a few fixed lists with special ids
    vocab = tok.target_encoder if tok.separate_vocabs else tok.encoder
    pad = vocab["<pad>"]
    assert pad == len(vocab) - 1
    rng = np.random.RandomState(seed)
    id_lists = [e["labels"] for e in encode_target]
    for _ in range(n_decode_random):
        n = int(rng.randint(1, 15))
        id_lists.append([int(x) for x in rng.randint(0, pad, size=n)])
    id_lists += [[1, 5, 6, 0], [7, 0, 8, 9, 0], [0, 0, 5], [pad, 5, 6], [], [0]]
    id_lists += [[vocab[k], 5, 6, 0] for k in vocab if k.startswith(">>") and k.endswith("<<")]
    decode, quirks = [], []
    for ids in id_lists:
        case = {
            "ids": ids,
            "text": tok.decode(ids, skip_special_tokens=True),
            "text_keep_special": tok.decode(ids, skip_special_tokens=False),
        }
        # skip_special_tokens drops ids by the tokenizer's special ids, and
        # its <pad> id is the *source* vocabulary's; a target <pad> of a
        # separate-vocabulary model is kept as the text "<pad>".  Generation
        # never produces <pad> (bad_words_ids), so these go to a list of
        # their own rather than into the cases a decoder should match.
        if tok.separate_vocabs and pad in ids:
            case["why"] = "target <pad> id is not the tokenizer's pad_token_id, so it is not skipped"
            quirks.append(case)
        else:
            decode.append(case)
    return {
        "transformers_version": transformers.__version__,
        "separate_vocabs": bool(tok.separate_vocabs),
        "note": "input_ids = tokenizer(text)['input_ids'] (ends with </s>); pieces = tokenizer.tokenize(text); "
        "labels = tokenizer(text_target=text)['input_ids']; "
        "text = tokenizer.decode(ids, skip_special_tokens=True); "
        "text_keep_special = tokenizer.decode(ids, skip_special_tokens=False)",
        "encode": encode,
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
    test_en = read_lines(os.path.join(data, "test_2016_flickr.en.gz"))
    test_de = read_lines(os.path.join(data, "test_2016_flickr.de.gz"), 8)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, sentencepiece {spm.__version__}")

    with tempfile.TemporaryDirectory() as tmp:
        src_spm = os.path.join(tmp, "source.spm")
        tgt_spm = os.path.join(tmp, "target.spm")
        sp_src = train_spm(train_en, SRC_SPM_VOCAB, src_spm, SPM_NORMALIZATION)
        sp_tgt = train_spm(train_de, TGT_SPM_VOCAB, tgt_spm, SPM_NORMALIZATION)
        src_pieces, tgt_pieces = normal_pieces(sp_src), normal_pieces(sp_tgt)
        print(f"spm pieces: source {sp_src.get_piece_size()}, target {sp_tgt.get_piece_size()}")

        vocabs = {
            "shared": marian_vocab([src_pieces, tgt_pieces]),
            "multi": marian_vocab([src_pieces, tgt_pieces], extra=LANG_TOKENS),
            "source": marian_vocab([src_pieces]),
            "target": marian_vocab([tgt_pieces]),
        }
        for k, v in vocabs.items():
            write_json(v, os.path.join(tmp, f"{k}.json"), indent=2)
            print(f"vocab {k}: {len(v)} entries, <pad> = {v['<pad>']}")

        report = {}
        all_cases = {}
        for spec in MODELS:
            if spec["separate"]:
                src_v, tgt_v = vocabs["source"], vocabs["target"]
                tok = MarianTokenizer(
                    source_spm=src_spm,
                    target_spm=tgt_spm,
                    vocab=os.path.join(tmp, "source.json"),
                    target_vocab_file=os.path.join(tmp, "target.json"),
                    separate_vocabs=True,
                    source_lang="en",
                    target_lang="de",
                )
            else:
                key = "multi" if spec["lang_tokens"] else "shared"
                src_v = tgt_v = vocabs[key]
                tok = MarianTokenizer(
                    source_spm=src_spm,
                    target_spm=tgt_spm,
                    vocab=os.path.join(tmp, f"{key}.json"),
                    source_lang="en",
                    target_lang="de" if not spec["lang_tokens"] else "mul",
                )
            pad_id = tgt_v["<pad>"]
            eos_id = tgt_v["</s>"]
            # config.pad_token_id is also the padding_idx of the encoder
            # embedding, so it must be < the source vocabulary size
            assert pad_id < len(src_v)
            model_dir = build_model(spec, out_dir, len(src_v), len(tgt_v), pad_id, eos_id, tok)

            tensors, meta = describe_saved(model_dir)
            with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
                config_json = json.load(f)
            with open(os.path.join(model_dir, "generation_config.json"), encoding="utf-8") as f:
                gen_json = json.load(f)
            report[spec["name"]] = {
                "files": sorted(os.listdir(model_dir)),
                "safetensors_metadata": meta,
                "tensors": tensors,
                "config.json": config_json,
                "generation_config.json": gen_json,
            }
            print(f"{spec['name']}: files {sorted(os.listdir(model_dir))}")
            print(f"  {len(tensors)} stored tensors, those outside the layers: "
                  f"{[k for k in tensors if '.layers.' not in k]}")

            sentences = [spec["source_prefix"] + s for s in test_en[:NUM_SENTENCES]]
            expected = generate_expected(model_dir, spec, sentences)
            write_json(expected, os.path.join(model_dir, "expected.json"))

            if spec["name"] in TOKENIZER_CASE_MODELS:
                all_cases[spec["name"]] = tokenizer_cases(
                    model_dir, test_en[NUM_SENTENCES:], test_de, 8, spec["seed"]
                )

    # {directory name: cases}, nothing else at the top level
    write_json(all_cases, os.path.join(out_dir, "tokenizer_cases.json"))
    write_json(report, os.path.join(out_dir, "save_report.json"), indent=1)

    total = 0
    for root, _, files in os.walk(out_dir):
        for fn in files:
            total += os.path.getsize(os.path.join(root, fn))
    print(f"total size of {out_dir}: {total} bytes")


if __name__ == "__main__":
    sys.exit(main())
