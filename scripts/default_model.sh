#!/usr/bin/env bash
# Prints the default model directory: the trained English-German model in models/en-de-general
# (models/en-de-multi30k, the image-caption model, when only it is there); otherwise (a checkout without it) a randomly initialised tiny model written
# by `xlate init-model` with a SentencePiece vocabulary trained on Multi30k, which exercises
# everything but does not translate. Needs a built tree (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
for model in models/en-de-general models/en-de-multi30k; do
  if [[ -f $model/config.json ]]; then
    echo "$model"
    exit 0
  fi
done
model_dir=build/models/tiny-random
if [[ ! -f "$model_dir/model.safetensors" ]]; then
  data=../shared/data/multi30k
  mkdir -p build/models
  gzip -dc "$data/train.en.gz" > build/models/train.en
  gzip -dc "$data/train.de.gz" > build/models/train.de
  build/cli/xlate init-model --preset tiny --vocab_size 1000 --out "$model_dir" \
    --spm_from build/models/train.en,build/models/train.de >&2
fi
echo "$model_dir"
