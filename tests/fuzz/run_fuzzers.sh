#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, AddressSanitizer + UndefinedBehaviorSanitizer; see
# tests/fuzz/CMakeLists.txt) and runs each for SECONDS on a copy of its seed corpus
# (tests/fuzz/corpus/<target>/), JOBS at a time. A crash, a sanitizer report, a leak, a timeout
# (10 s per input) or running out of memory (2 GiB) fails; the crashing input is kept in
# WORK_DIR/artifacts/ and named in the output. Prints each target's executions.
#   usage: run_fuzzers.sh WORK_DIR SECONDS [JOBS] [TARGET...]
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
[[ $# -ge 2 ]] || { echo "usage: run_fuzzers.sh WORK_DIR SECONDS [JOBS] [TARGET...]" >&2; exit 2; }
work=$1 seconds=$2 jobs=${3:-1}
[[ $seconds =~ ^[1-9][0-9]*$ && $jobs =~ ^[1-9][0-9]*$ ]] \
  || { echo "run_fuzzers.sh: SECONDS and JOBS must be positive integers" >&2; exit 2; }
shift $(( $# < 3 ? $# : 3 ))
targets=("$@")
(( ${#targets[@]} )) || targets=(safetensors model_config text request token_corpus checkpoint markup)
if ! command -v clang++ > /dev/null; then echo "skipped: no clang++"; exit 77; fi
mkdir -p "$work/artifacts"
build=$work/build
# -O2 for the executions per second, line tables only for the reports' stacks (full debug
# information would add half again to the build).
if ! { CC=clang CXX=clang++ cmake -S "$repo" -B "$build" -DXLATE_FUZZ=ON -DXLATE_CUDA=OFF \
         -DCMAKE_BUILD_TYPE=RelWithDebInfo \
         "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG" \
         > "$work/configure.log" 2>&1 &&
       cmake --build "$build" -j"$(nproc)" --target fuzzers > "$work/build.log" 2>&1; }; then
  tail -n 30 "$work/configure.log" "$work/build.log"
  exit 1
fi

run() {  # run TARGET: fuzz it for $seconds; the log is $work/TARGET.log
  local target=$1
  rm -rf "$work/corpus/$target"
  mkdir -p "$work/corpus/$target"
  cp "$repo/tests/fuzz/corpus/$target"/* "$work/corpus/$target/"
  "$build/tests/fuzz/${target}_fuzzer" "$work/corpus/$target" -max_total_time="$seconds" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/${target}-" > "$work/$target.log" 2>&1
}
export -f run
export work seconds build repo
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run {}'

failures=0
for target in "${targets[@]}"; do
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$target.log")
  if grep -q "ERROR: libFuzzer\|ERROR: AddressSanitizer\|runtime error:\|ERROR: LeakSanitizer\|==ERROR" \
      "$work/$target.log" || [[ -z $executions ]]; then
    echo "FAIL: $target"
    grep -m1 -A12 "ERROR\|runtime error" "$work/$target.log"
    grep "Test unit written to" "$work/$target.log"
    failures=$((failures + 1))
  else
    echo "ok: $target: $executions executions in $seconds s, $(ls "$work/corpus/$target" | wc -l) corpus inputs"
  fi
done
test "$failures" -eq 0
