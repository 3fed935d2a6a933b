#!/usr/bin/env bash
# The main job until the server exists: set up, build, and translate sample sentences
# (Multi30k test_2016_flickr) with the default model directory.
#   usage: scripts/translate_samples.sh [MODEL_DIR]
# Without a trained model in the repository yet, the default is a randomly initialised tiny
# model made by `xlate init-model` (its output is not a translation, it shows the pipeline).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
model_dir=${1:-build/models/tiny-random}
data=../shared/data/multi30k
if [[ ! -f "$model_dir/model.safetensors" ]]; then
  mkdir -p build/models
  gzip -dc "$data/train.en.gz" > build/models/train.en
  gzip -dc "$data/train.de.gz" > build/models/train.de
  build/engine/xlate init-model --preset tiny --vocab_size 1000 --out "$model_dir" \
    --spm_from build/models/train.en,build/models/train.de
fi
gzip -dc "$data/test_2016_flickr.en.gz" | head -n 5 | tee /dev/stderr \
  | build/engine/xlate translate --model_dir "$model_dir" --scores
