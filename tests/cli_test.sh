#!/usr/bin/env bash
# The `xlate` command line: file and stdin input agree line by line, errors are clear.
# usage: cli_test.sh XLATE_BINARY FIXTURE_DIR
set -uo pipefail
xlate=$1 fixtures=$2
model=$fixtures/tiny
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0 passes=0
check() {  # check NAME COMMAND...
  local name=$1; shift
  if "$@"; then passes=$((passes + 1)); else echo "FAIL: $name"; failures=$((failures + 1)); fi
}

head -n 20 "$fixtures/test_2016_flickr.en" > "$work/in.txt"
"$xlate" translate --model_dir "$model" --input "$work/in.txt" --output "$work/out_file.txt" \
  --batch_size 8 2> "$work/progress.txt"
check "translate from a file exits 0" test $? -eq 0
check "one output line per input line" test "$(wc -l < "$work/out_file.txt")" -eq 20
check "progress goes to stderr" grep -q "20 lines" "$work/progress.txt"
"$xlate" translate --model_dir "$model" --batch_size 3 < "$work/in.txt" > "$work/out_stdin.txt"
check "stdin and file input give the same translations" cmp -s "$work/out_file.txt" "$work/out_stdin.txt"
"$xlate" translate --model_dir "$model" --batch_size 3 --threads 2 --workers 2 < "$work/in.txt" \
  > "$work/out_workers.txt"
check "two workers give the same translations" cmp -s "$work/out_file.txt" "$work/out_workers.txt"
"$xlate" translate --model_dir "$model" --workers 0 < "$work/in.txt" > /dev/null 2> "$work/err.txt"
check "workers 0 names the option" grep -q "workers = 0 is out of range" "$work/err.txt"

"$xlate" translate --model_dir "$model" --split_sentences=false --target_prefix "Ein Hund" \
  --input "$work/in.txt" > "$work/prefixed.txt" 2>/dev/null
check "every translation starts with --target_prefix" \
  test "$(grep -c '^Ein Hund' "$work/prefixed.txt")" -eq 20
"$xlate" translate --model_dir "$model" --target_prefix "Ein" < "$work/in.txt" > /dev/null \
  2> "$work/err.txt"
check "--target_prefix names --split_sentences" grep -q "split_sentences=false" "$work/err.txt"

# --keep_placeholders: the placeholders come back as given, and the text without them is
# translated whole, as the same text on a line of its own is (white space aside).
printf 'A dog {name} runs.\n%%(n)s men ${place} sit.\n{a} %%s\n' > "$work/placeholders.txt"
printf 'A dog runs.\nmen sit.\n' > "$work/runs.txt"
"$xlate" translate --model_dir "$model" --keep_placeholders < "$work/placeholders.txt" \
  > "$work/kept.txt" 2>/dev/null
"$xlate" translate --model_dir "$model" < "$work/runs.txt" > "$work/runs_out.txt" 2>/dev/null
check "--keep_placeholders keeps each placeholder once" \
  test "$(grep -c -F '{name}' "$work/kept.txt")" -eq 1 -a \
       "$(grep -F '%(n)s' "$work/kept.txt" | grep -c -F '${place}')" -eq 1 -a \
       "$(sed -n 3p "$work/kept.txt")" = '{a} %s'
check "--keep_placeholders translates the text around them whole" \
  cmp -s <(head -2 "$work/kept.txt" | sed -e 's/{name}//' -e 's/%(n)s//' -e 's/${place}//' \
             | tr -d ' ') <(tr -d ' ' < "$work/runs_out.txt")
"$xlate" translate --model_dir "$model" --keep_placeholders --scores < "$work/in.txt" \
  > /dev/null 2> "$work/err.txt"
check "--keep_placeholders names what it does not take" grep -q "does not take" "$work/err.txt"

# --glossary: every hypothesis of a sentence with terms holds their targets; a sentence without
# any translates as without the glossary; a glossary that cannot be read is named.
printf 'dog\tKatze\n# a comment\nman\tFrau\n' > "$work/glossary.tsv"
printf 'A dog and a man.\nTwo children play in the snow.\n' > "$work/glossed.txt"
"$xlate" translate --model_dir "$model" --glossary "$work/glossary.tsv" --n_best 3 \
  --split_sentences=false < "$work/glossed.txt" > "$work/glossed_out.txt" 2>/dev/null
"$xlate" translate --model_dir "$model" --n_best 3 --split_sentences=false \
  < "$work/glossed.txt" > "$work/plain_out.txt" 2>/dev/null
check "--glossary puts its targets in every hypothesis" \
  test "$(grep '^0 ' "$work/glossed_out.txt" | grep Katze | grep -c Frau)" -eq 3
check "--glossary leaves sentences without terms as they were" \
  cmp -s <(grep '^1 ' "$work/glossed_out.txt") <(grep '^1 ' "$work/plain_out.txt")
# --constrained_beam_size: the line with terms searches as at --beam_size 8, the other as at 4.
"$xlate" translate --model_dir "$model" --glossary "$work/glossary.tsv" --n_best 2 \
  --constrained_beam_size 8 --split_sentences=false < "$work/glossed.txt" \
  > "$work/glossed_wide.txt" 2>/dev/null
"$xlate" translate --model_dir "$model" --glossary "$work/glossary.tsv" --n_best 2 \
  --beam_size 8 --split_sentences=false < "$work/glossed.txt" > "$work/all_wide.txt" 2>/dev/null
"$xlate" translate --model_dir "$model" --n_best 2 --split_sentences=false \
  < "$work/glossed.txt" > "$work/plain_two.txt" 2>/dev/null
check "--constrained_beam_size widens the beam of the lines with terms only" \
  cmp -s <(grep '^0 ' "$work/glossed_wide.txt"; grep '^1 ' "$work/plain_two.txt") \
  <(grep '^0 ' "$work/all_wide.txt"; grep '^1 ' "$work/glossed_wide.txt")
printf '<p>A <b>dog</b> and a <i>man</i>.</p>' | "$xlate" translate --model_dir "$model" \
  --glossary "$work/glossary.tsv" --mime_type text/html > "$work/glossed_page.txt" 2>/dev/null
# Each tag around a source term holds its target (the terms' words are linked to each other),
# in whichever order the translation has them.
check "--glossary with --mime_type text/html: the targets, each in its tag" \
  test "$(grep '<b>Katze</b>' "$work/glossed_page.txt" | grep -c '<i>Frau</i>')" -eq 1
"$xlate" translate --model_dir "$model" --glossary "$work/nowhere.tsv" < "$work/glossed.txt" \
  > /dev/null 2> "$work/err.txt"
check "an unreadable --glossary exits 2 naming it" grep -q "nowhere.tsv" "$work/err.txt"

# --mime_type: the whole input is one document; its markup comes back, its text translated as
# the same runs are as plain text; a malformed XML document exits 1 naming the line.
printf '<p class="x">A dog runs.</p>\n<code>make all</code>\n' > "$work/page.html"
mapfile -t run < <(printf 'A dog runs.\n' | "$xlate" translate --model_dir "$model" 2>/dev/null)
"$xlate" translate --model_dir "$model" --mime_type text/html < "$work/page.html" \
  > "$work/page.out" 2>/dev/null
check "--mime_type text/html keeps the markup" \
  test "$(cat "$work/page.out")" = "$(printf '<p class="x">%s</p>\n<code>make all</code>' "${run[0]}")"
# A paragraph with an inline tag is translated whole (its text is the plain translation) and
# the tag comes back once, around some of it.
printf '<p>A <b>dog</b> runs.</p>' | "$xlate" translate --model_dir "$model" --mime_type text/html \
  > "$work/inline.out" 2>/dev/null
check "--mime_type text/html translates a paragraph whole, its inline tag kept" \
  test "$(sed 's/<[^>]*>//g' "$work/inline.out")" = "${run[0]}" -a \
       "$(grep -o '<b>' "$work/inline.out" | wc -l)" -eq 1 -a \
       "$(grep -o '</b>' "$work/inline.out" | wc -l)" -eq 1
printf '<doc>\n  <t>A dog runs.</t>\n</doc>\n' > "$work/doc.xml"
"$xlate" translate --model_dir "$model" --mime_type text/xml < "$work/doc.xml" \
  > "$work/doc.out" 2>/dev/null
check "--mime_type text/xml keeps the elements" \
  test "$(cat "$work/doc.out")" = "$(printf '<doc>\n  <t>%s</t>\n</doc>' "${run[0]}")"
printf '<doc>\n<t></doc>\n' | "$xlate" translate --model_dir "$model" --mime_type text/xml \
  > /dev/null 2> "$work/err.txt"
check "malformed XML names its line" grep -q "not well-formed XML at line 2" "$work/err.txt"

"$xlate" translate --model_dir "$model" --n_best 2 --input "$work/in.txt" > "$work/nbest.txt" 2>/dev/null
check "n-best writes two lines per sentence" test "$(wc -l < "$work/nbest.txt")" -eq 40
check "n-best lines carry the sentence index" grep -q "^19 ||| " "$work/nbest.txt"

"$xlate" translate --model_dir "$model" --beam_size 0 < "$work/in.txt" > /dev/null 2> "$work/err.txt"
check "beam 0 exits 2" test $? -eq 2
check "beam 0 names the option" grep -q "beam_size = 0 is out of range" "$work/err.txt"

"$xlate" translate --model_dir "$work/nowhere" < "$work/in.txt" > /dev/null 2> "$work/err.txt"
check "missing model exits 1" test $? -eq 1
check "missing model names config.json" grep -q "config.json" "$work/err.txt"

# A batch whose decoding step cannot be allocated (512 sentences x beam 256 under a 1.5 GB
# address-space limit, where 20 sentences translate fine) is an error that names its size.
# Not under a sanitizer (XLATE_SANITIZER): its runtime reserves far more address space.
if [[ -z ${XLATE_SANITIZER:-} ]]; then
  head -n 600 "$fixtures/test_2016_flickr.en" > "$work/in600.txt"
  (ulimit -v 1500000; "$xlate" translate --model_dir "$model" --threads 1 --batch_size 4096 \
    --beam_size 256 --split_sentences=false < "$work/in600.txt" > /dev/null 2> "$work/err.txt")
  check "a batch that does not fit exits 1" test $? -eq 1
  check "a batch that does not fit is named" grep -q "out of host memory in a decoding step of 512 sentences (131072 hypotheses)" "$work/err.txt"
  (ulimit -v 1500000; "$xlate" translate --model_dir "$model" --threads 1 < "$work/in.txt" > /dev/null 2>&1)
  check "the same limit translates a small batch" test $? -eq 0
else
  echo "skipped under $XLATE_SANITIZER: the address-space limit checks"
fi

# Lines are text: a line of two sentences is their translations joined by its own separator;
# blank lines come back as they are.
head -n 2 "$work/in.txt" > "$work/two.txt"
"$xlate" translate --model_dir "$model" < "$work/two.txt" > "$work/two_out.txt"
printf '%s   %s\n \t\n\n' "$(sed -n 1p "$work/two.txt")" "$(sed -n 2p "$work/two.txt")" \
  | "$xlate" translate --model_dir "$model" > "$work/joined_out.txt"
printf '%s   %s\n \t\n\n' "$(sed -n 1p "$work/two_out.txt")" "$(sed -n 2p "$work/two_out.txt")" \
  > "$work/joined_expected.txt"
check "a line of two sentences and blank lines" \
  cmp -s "$work/joined_out.txt" "$work/joined_expected.txt"

printf 'good line\nbad \xff line\n' | "$xlate" translate --model_dir "$model" > /dev/null 2> "$work/err.txt"
check "invalid UTF-8 exits 1" test $? -eq 1
check "invalid UTF-8 is reported" grep -q "not valid UTF-8" "$work/err.txt"

"$xlate" init-model --preset huge --spm_from "$work/in.txt" --out "$work/m" 2> "$work/err.txt"
check "unknown preset exits 2" test $? -eq 2
check "unknown preset is named" grep -q 'unknown preset "huge"' "$work/err.txt"

# Attention pictures: one PNG per sentence and decoder layer (the tiny model has 2), named by
# line and sentence, beside unchanged translations. A build without PLplot refuses the flag.
printf '%s\n%s   %s\n' "$(sed -n 1p "$work/in.txt")" "$(sed -n 2p "$work/in.txt")" \
  "$(sed -n 3p "$work/in.txt")" > "$work/three.txt"
"$xlate" translate --model_dir "$model" --attention_png "$work/pictures" < "$work/three.txt" \
  > "$work/pictures_out.txt" 2> "$work/err.txt"
status=$?
if grep -q "draws no pictures" "$work/err.txt"; then
  check "--attention_png without PLplot exits 2" test $status -eq 2
else
  check "--attention_png exits 0" test $status -eq 0
  "$xlate" translate --model_dir "$model" < "$work/three.txt" > "$work/plain_out.txt" 2>/dev/null
  check "--attention_png leaves the translations as they are" \
    cmp -s "$work/pictures_out.txt" "$work/plain_out.txt"
  for name in line1-sentence1 line2-sentence1 line2-sentence2; do
    for layer in 0 1; do
      check "$name-layer$layer.png is a PNG" \
        test "$(head -c 8 "$work/pictures/$name-layer$layer.png" | od -An -tx1 | tr -d ' ')" \
        = "89504e470d0a1a0a"
    done
  done
  check "one picture per sentence and layer" test "$(ls "$work/pictures" | wc -l)" -eq 6
  "$xlate" translate --model_dir "$model" --attention_png "$work/in.txt/pictures" \
    < "$work/three.txt" > /dev/null 2> "$work/err.txt"
  check "--attention_png under a file exits 2" test $? -eq 2
  check "--attention_png under a file is named" grep -q "in.txt/pictures is not a directory" \
    "$work/err.txt"
fi

echo "$passes passed, $failures failed"
test "$failures" -eq 0
