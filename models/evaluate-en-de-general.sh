#!/usr/bin/env bash
# BLEU of an English->German model on the general model's held-out test sets: newstest2014
# (news), FLORES-200 devtest (Wikipedia-like, general-en-de/heldout) and Multi30k test_2016_flickr
# (captions), with beam search (beam 4, alpha 0.6): sacreBLEU-compatible (`xlate bleu`, cased,
# detokenised, 13a) and, when the sacrebleu command is there, sacreBLEU itself, as a Markdown
# table. None of these sets is trained or tuned on (newstest2013 is the dev set).
#   bash models/evaluate-en-de-general.sh MODEL_DIR [SENTENCES_PER_SET]
# XLATE_BIN and XLATE_DATA_DIR override the xlate binary and the data folder.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
model="${1:?usage: evaluate-en-de-general.sh MODEL_DIR [SENTENCES_PER_SET]}"
limit="${2:-0}"
data="${XLATE_DATA_DIR:-$repo/../shared/data}"
xlate="${XLATE_BIN:-$repo/build/cli/xlate}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

take() {  # take FILE: its lines (gunzipped), the first $limit when set
  # Whole first: head closing a pipe early would end its writer with SIGPIPE, which pipefail
  # turns into this script's silent exit.
  if [[ $1 == *.gz ]]; then gzip -dc "$1"; else cat "$1"; fi > "$work/whole"
  if [[ $limit -gt 0 ]]; then head -n "$limit" "$work/whole"; else cat "$work/whole"; fi
}

echo "| test set | sentences | xlate bleu (sacreBLEU-compatible) | sacreBLEU |"
echo "| --- | --- | --- | --- |"
for set in "newstest2014:$data/wmt14/newstest2014" \
           "flores200-devtest:$data/general-en-de/heldout/flores200-devtest" \
           "multi30k-test_2016_flickr:$data/multi30k/test_2016_flickr"; do
  name=${set%%:*} base=${set#*:}
  suffix=""; [[ -f $base.en ]] || suffix=".gz"
  take "$base.en$suffix" > "$work/src"
  take "$base.de$suffix" > "$work/ref"
  "$xlate" translate --model_dir "$model" --beam_size 4 --input "$work/src" \
    --output "$work/hyp" 2> /dev/null
  score=$("$xlate" bleu --ref "$work/ref" --hyp "$work/hyp" --json |
    python3 -c 'import json, sys; print("%.2f" % json.load(sys.stdin)["sacrebleu"]["score"])')
  sacre="-"
  if command -v sacrebleu > /dev/null; then
    sacre=$(sacrebleu "$work/ref" -i "$work/hyp" -b -w 2 2> /dev/null || echo "-")
  fi
  echo "| $name | $(wc -l < "$work/src") | $score | $sacre |"
done
