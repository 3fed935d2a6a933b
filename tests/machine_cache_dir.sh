#!/usr/bin/env bash
# Prints the folder (made if missing) where test scripts keep what outlives a clone on this
# machine: builds of Debian sources for the sanitizers, the image's root filesystem, the fuzzers'
# corpora. XLATE_CACHE_DIR overrides ~/.cache/xlate. Each entry is named by what it was made from
# (package versions, a digest of inputs), so a change makes a new one and a stale one is never
# read; an entry appears by rename once complete.
#   usage: machine_cache_dir.sh [SUBFOLDER]
set -euo pipefail
dir=${XLATE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/xlate}${1:+/$1}
mkdir -p "$dir"
cd "$dir" && pwd
