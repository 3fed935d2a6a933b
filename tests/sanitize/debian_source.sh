#!/usr/bin/env bash
# Unpacks the Debian source package of the installed version of a binary package (Debian's
# patches applied) into DEST_DIR and prints the source folder's path. The sanitizer tests build
# libraries the machine already has from exactly that source: Abseil with ThreadSanitizer,
# SentencePiece as a static library. scripts/setup.sh enables Debian's source index.
#   usage: debian_source.sh BINARY_PACKAGE DEST_DIR
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: debian_source.sh BINARY_PACKAGE DEST_DIR" >&2; exit 2; }
package=$1 dest=$2
version=$(dpkg-query -W -f='${Version}' "$package" 2>/dev/null) \
  || { echo "debian_source.sh: $package is not installed (scripts/setup.sh)" >&2; exit 1; }
mkdir -p "$dest"
cd "$dest"
if ! apt-get source -qq "$package=$version" > source.log 2>&1; then
  cat source.log >&2
  echo "debian_source.sh: no Debian source for $package=$version; scripts/setup.sh enables" \
       "deb-src and updates the index" >&2
  exit 1
fi
source_dir=$(find "$PWD" -mindepth 1 -maxdepth 1 -type d | head -1)
[[ -n $source_dir ]] || { echo "debian_source.sh: apt-get source unpacked nothing" >&2; exit 1; }
echo "$source_dir"
