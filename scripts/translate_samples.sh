#!/usr/bin/env bash
# Offline translation of sample sentences (Multi30k test_2016_flickr) with `xlate translate`.
#   usage: scripts/translate_samples.sh [MODEL_DIR]
# Without MODEL_DIR it uses scripts/default_model.sh's model (see there).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
model_dir=${1:-$(bash scripts/default_model.sh)}
gzip -dc ../shared/data/multi30k/test_2016_flickr.en.gz | head -n 5 | tee /dev/stderr \
  | build/cli/xlate translate --model_dir "$model_dir" --scores
