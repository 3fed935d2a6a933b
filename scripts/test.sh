#!/usr/bin/env bash
# Sets up, builds and runs every test (CTest: GoogleTest units, the CLI test, the numpy
# reference self-check). The one test command of README.md and .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
# Tests run two at a time; one OpenMP thread each keeps them from oversubscribing the cores.
export OMP_NUM_THREADS=1
ctest --test-dir build -j2 --output-on-failure
