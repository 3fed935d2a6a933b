#!/usr/bin/env bash
# Builds what the images ship (xlate-server, xlate-health, xlate, xlate-trainer and the
# SentencePiece module), not the tests, and installs the CMake install components named by
# XLATE_INSTALL_COMPONENTS (default "runtime": the server, the tools and the shipped model;
# "trainer": xlate-trainer, which needs Open MPI) under PREFIX.
#   usage: [XLATE_INSTALL_COMPONENTS="runtime trainer"] scripts/build_install.sh BUILD_DIR PREFIX
#          [cmake -D options...]
# The Dockerfile runs it (CPU: -DXLATE_CUDA=OFF); so does tests/deploy/image_rootfs_test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 2 ]] || { echo "usage: scripts/build_install.sh BUILD_DIR PREFIX [cmake -D options...]" >&2; exit 2; }
build_dir=$1 prefix=$2
shift 2
mkdir -p "$build_dir"
# Without PLplot (xlate translate --attention_png): the images' runtime would need cairo, pango
# and X libraries for a desk tool's pictures.
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DXLATE_PLOTS=OFF "$@" \
  > "$build_dir/configure.log" 2>&1 \
  || { cat "$build_dir/configure.log"; exit 1; }
cmake --build "$build_dir" -j"$(nproc)" \
  --target xlate-server xlate-health xlate xlate-trainer xlate_sentencepiece
for component in ${XLATE_INSTALL_COMPONENTS:-runtime}; do
  cmake --install "$build_dir" --component "$component" --prefix "$prefix"
done
