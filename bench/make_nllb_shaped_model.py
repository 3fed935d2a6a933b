#!/usr/bin/env python3
"""An NLLB-200-distilled-600M-shaped Hugging Face directory with random weights, for measuring
what loading such a model costs (time, memory): M2M100ForConditionalGeneration with the shape of
facebook/nllb-200-distilled-600M (d_model 1024, 12+12 pre-norm layers, 16 heads, FFN 4096, ReLU,
vocabulary 256,206, shared and tied embeddings, max_position_embeddings 1024), built and saved by
transformers itself (model.safetensors, 2.4 GB in float32).

    python3 bench/make_nllb_shaped_model.py OUTPUT_DIR [--dtype float32|float16]

The tokenizer is the tiny NLLB fixture's (tests/data/hf/nllb-gelu: sentencepiece.bpe.model,
tokenizer.json, 406 tokens with eng_Latn, deu_Latn, fra_Latn, spa_Latn): the embedding rows past
it are never cut from text, as the few rows past a real NLLB tokenizer are, so the texts are
nonsense but every weight a real model has is loaded, multiplied and measured.
"""
import argparse
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZER = os.path.join(HERE, "..", "tests", "data", "hf", "nllb-gelu")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output")
    parser.add_argument("--dtype", default="float32", choices=("float32", "float16"))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration

    torch.manual_seed(args.seed)
    config = M2M100Config(
        vocab_size=256206, d_model=1024, encoder_layers=12, decoder_layers=12,
        encoder_attention_heads=16, decoder_attention_heads=16, encoder_ffn_dim=4096,
        decoder_ffn_dim=4096, activation_function="relu", max_position_embeddings=1024,
        scale_embedding=True, pad_token_id=1, bos_token_id=0, eos_token_id=2,
        decoder_start_token_id=2, tie_word_embeddings=True, tokenizer_class="NllbTokenizer")
    model = M2M100ForConditionalGeneration(config).eval()
    if args.dtype == "float16":
        model = model.half()
    os.makedirs(args.output, exist_ok=True)
    model.save_pretrained(args.output, safe_serialization=True)
    for name in ("sentencepiece.bpe.model", "tokenizer.json", "tokenizer_config.json",
                 "generation_config.json"):
        shutil.copy(os.path.join(TOKENIZER, name), os.path.join(args.output, name))
    parameters = sum(p.numel() for p in model.parameters())
    print(f"{args.output}: {parameters / 1e6:.1f}M parameters, {args.dtype}")


if __name__ == "__main__":
    main()
