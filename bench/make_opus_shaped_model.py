#!/usr/bin/env python3
"""An OPUS-MT-shaped Hugging Face Marian directory with random weights, for benchmarks: the
shape of Helsinki-NLP/opus-mt-en-de (d_model 512, 6+6 layers, 8 heads, FFN 2048, swish,
vocabulary 58,101, shared and tied embeddings), built and saved by transformers itself, as a
user's download would be laid out.

    python3 bench/make_opus_shaped_model.py OUTPUT_DIR [--data_dir ../shared/data]

Needs torch, transformers and sentencepiece. The tokenizer is a real one: SentencePiece unigram
models (8,000 pieces each) trained on Multi30k and the general English-German corpus, and a
vocab.json of their pieces filled up to 58,101 entries with pieces no text produces (as a real
vocabulary's rare pieces, they only widen the output layer). As in every OPUS-MT model, the
<pad> embedding row (the decoder's start) is zero, which is what CTranslate2's converter
assumes (it starts the decoder from a zero embedding).
"""
import argparse
import gzip
import json
import os
import tempfile

VOCABULARY = 58101


def sentences(path, limit):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= limit:
                break
            yield line.strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output")
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--data_dir", default=os.path.join(here, "..", "..", "shared", "data"))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    import sentencepiece
    import torch
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer

    os.makedirs(args.output, exist_ok=True)
    work = tempfile.mkdtemp(prefix="opus_shaped_")
    pieces = []
    for side, name in (("en", "source"), ("de", "target")):
        text = os.path.join(work, f"{side}.txt")
        with open(text, "w", encoding="utf-8") as f:
            for corpus in ("multi30k/train", "general-en-de/train"):
                for line in sentences(os.path.join(args.data_dir, f"{corpus}.{side}.gz"), 60000):
                    f.write(line + "\n")
        prefix = os.path.join(work, name)
        sentencepiece.SentencePieceTrainer.train(
            input=text, model_prefix=prefix, vocab_size=8000, model_type="unigram",
            character_coverage=1.0, bos_id=-1, eos_id=-1, unk_id=0, minloglevel=2)
        os.replace(prefix + ".model", os.path.join(work, f"{name}.spm"))
        processor = sentencepiece.SentencePieceProcessor(
            model_file=os.path.join(work, f"{name}.spm"))
        pieces += [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    vocabulary = {"</s>": 0, "<unk>": 1}
    for piece in pieces:
        if piece not in vocabulary and piece != "<unk>":
            vocabulary[piece] = len(vocabulary)
    filler = 0
    while len(vocabulary) < VOCABULARY - 1:
        vocabulary[f"\u2581rare{filler}"] = len(vocabulary)
        filler += 1
    vocabulary["<pad>"] = len(vocabulary)
    with open(os.path.join(work, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocabulary, f, ensure_ascii=False)
    tokenizer = MarianTokenizer(os.path.join(work, "source.spm"), os.path.join(work, "target.spm"),
                                os.path.join(work, "vocab.json"), source_lang="en",
                                target_lang="de")

    pad = vocabulary["<pad>"]
    config = MarianConfig(
        vocab_size=VOCABULARY, decoder_vocab_size=VOCABULARY, d_model=512, encoder_layers=6,
        decoder_layers=6, encoder_attention_heads=8, decoder_attention_heads=8,
        encoder_ffn_dim=2048, decoder_ffn_dim=2048, activation_function="swish",
        max_position_embeddings=512, scale_embedding=True, pad_token_id=pad,
        decoder_start_token_id=pad, eos_token_id=0, forced_eos_token_id=0,
        share_encoder_decoder_embeddings=True, tie_word_embeddings=True)
    torch.manual_seed(args.seed)
    model = MarianMTModel(config).eval()
    with torch.no_grad():
        model.model.shared.weight[pad].zero_()
    model.generation_config.bad_words_ids = [[pad]]
    model.save_pretrained(args.output, safe_serialization=True)
    tokenizer.save_pretrained(args.output)
    print(f"wrote {args.output}: {sum(p.numel() for p in model.parameters())} parameters, "
          f"vocabulary {VOCABULARY}")


if __name__ == "__main__":
    main()
