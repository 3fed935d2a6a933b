#!/usr/bin/env bash
# Builds the installed SentencePiece from its Debian source as static, position-independent
# libraries (libsentencepiece.a, libsentencepiece_train.a, with SentencePiece's own protobuf-lite
# inside) into WORK_DIR/lib, for -DXLATE_SENTENCEPIECE_STATIC_DIR: the SentencePiece module then
# links them with every symbol hidden, so its protobuf cannot meet the server's and the module
# loads without RTLD_DEEPBIND, which the sanitizers refuse. Debian ships no static library; its
# source builds one once its disable-static-library patch is reverted. Prints the lib folder;
# a WORK_DIR that has them already is reused.
#   usage: build_static_sentencepiece.sh WORK_DIR
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: build_static_sentencepiece.sh WORK_DIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
work=$(cd "$1" && pwd)
lib=$work/lib
if [[ ! -f $lib/complete ]]; then
  rm -rf "$work/source" "$work/build" "$lib"
  source_dir=$(bash "$here/debian_source.sh" libsentencepiece-dev "$work/source")
  patch -R -p1 -d "$source_dir" < "$source_dir/debian/patches/disable-static-library.patch" \
    > "$work/patch.log"
  if ! { cmake -S "$source_dir" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
           -DSPM_ENABLE_TCMALLOC=OFF > "$work/configure.log" 2>&1 &&
         cmake --build "$work/build" -j"$(nproc)" \
           --target sentencepiece-static sentencepiece_train-static > "$work/build.log" 2>&1; }; then
    tail -n 30 "$work/configure.log" "$work/build.log" >&2
    exit 1
  fi
  mkdir -p "$lib"
  cp "$work/build/src/libsentencepiece.a" "$work/build/src/libsentencepiece_train.a" "$lib/"
  touch "$lib/complete"
fi
echo "$lib"
