#!/usr/bin/env bash
# BLEU of an English->German model on the held-out Multi30k test sets, with beam search (beam 4,
# alpha 0.6) and greedy search: sacreBLEU-compatible (cased, detokenised, 13a) and tokenised
# lowercased BLEU, as a Markdown table.
#   bash models/evaluate-en-de-multi30k.sh MODEL_DIR [BEAM_SIZE]
# XLATE_BIN and XLATE_DATA_DIR override the xlate binary and the data folder.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
model="${1:?usage: evaluate-en-de-multi30k.sh MODEL_DIR [BEAM_SIZE]}"
beam="${2:-4}"
data="${XLATE_DATA_DIR:-$repo/../shared/data}/multi30k"
sets="${XLATE_EVAL_SETS:-test_2016_flickr test_2017_flickr test_2017_mscoco}"
xlate="${XLATE_BIN:-$repo/build/cli/xlate}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

score() {  # score SET BEAM -> "sacre tok_lc"
  local set=$1 beam=$2
  gzip -dc "$data/$set.en.gz" > "$work/src"
  gzip -dc "$data/$set.de.gz" > "$work/ref"
  "$xlate" translate --model_dir "$model" --beam_size "$beam" --input "$work/src" \
    --output "$work/hyp" 2> /dev/null
  "$xlate" bleu --ref "$work/ref" --hyp "$work/hyp" --lowercase --json |
    python3 -c 'import json, sys; s = json.load(sys.stdin); print("%.2f %.2f" % (s["sacrebleu"]["score"], s["tokenised"]["score"]))'
}

echo "| test set | sentences | search | sacreBLEU | tokenised lowercased BLEU |"
echo "| --- | --- | --- | --- | --- |"
for set in $sets; do
  lines=$(gzip -dc "$data/$set.en.gz" | wc -l)
  for search in "$beam" 1; do
    read -r sacre tok < <(score "$set" "$search")
    label=$([[ $search == 1 ]] && echo greedy || echo "beam $search")
    echo "| $set | $lines | $label | $sacre | $tok |"
  done
done
