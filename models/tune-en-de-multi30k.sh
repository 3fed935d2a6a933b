#!/usr/bin/env bash
# Chooses the decoding settings of an English->German model on the Multi30k validation set only
# (never the test sets): sacreBLEU of every beam size x length penalty alpha of the grid.
#   bash models/tune-en-de-multi30k.sh MODEL_DIR
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
model="${1:?usage: tune-en-de-multi30k.sh MODEL_DIR}"
data="${XLATE_DATA_DIR:-$repo/../shared/data}/multi30k"
beams="${XLATE_TUNE_BEAMS:-1 4 8}"
alphas="${XLATE_TUNE_ALPHAS:-0.0 0.6 1.0}"
xlate="$repo/build/cli/xlate"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
gzip -dc "$data/val.en.gz" > "$work/src"
gzip -dc "$data/val.de.gz" > "$work/ref"

echo "| beam | alpha | val sacreBLEU |"
echo "| --- | --- | --- |"
for beam in $beams; do
  for alpha in $alphas; do
    # Greedy search has no length penalty to tune.
    [[ $beam == 1 && $alpha != "${alphas%% *}" ]] && continue
    "$xlate" translate --model_dir "$model" --beam_size "$beam" --length_penalty "$alpha" \
      --input "$work/src" --output "$work/hyp" 2> /dev/null
    bleu=$("$xlate" bleu --ref "$work/ref" --hyp "$work/hyp" --json |
      python3 -c 'import json, sys; print("%.2f" % json.load(sys.stdin)["sacrebleu"]["score"])')
    echo "| $beam | $([[ $beam == 1 ]] && echo - || echo "$alpha") | $bleu |"
  done
done
