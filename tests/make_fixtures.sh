#!/usr/bin/env bash
# Test fixtures: a tiny random model with a SentencePiece vocabulary trained on Multi30k.
# usage: make_fixtures.sh XLATE_BINARY DATA_DIR FIXTURE_DIR
set -euo pipefail
xlate=$1 data=$2 out=$3
mkdir -p "$out/scratch"
for part in train.en train.de test_2016_flickr.en test_2016_flickr.de; do
  gzip -dc "$data/multi30k/$part.gz" > "$out/$part"
done
if [[ ! -f "$out/tiny/model.safetensors" ]]; then
  "$xlate" init-model --preset tiny --spm_from "$out/train.en,$out/train.de" \
    --vocab_size 1000 --seed 7 --out "$out/tiny"
fi
