#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, AddressSanitizer + UndefinedBehaviorSanitizer; see
# tests/fuzz/CMakeLists.txt) and runs each for RUNS executions, JOBS at a time, on its corpus: the
# seeds of tests/fuzz/corpus/<target>/ and what earlier runs on this machine found
# (tests/machine_cache_dir.sh's fuzz-corpus/<target>/, kept between runs and clones, so each run
# goes on from where the last stopped). A count of executions, not a time: the work is the same
# however loaded the machine is. A crash, a sanitizer report, a leak, a timeout (10 s per input)
# or running out of memory (2 GiB) fails; the crashing input is kept in WORK_DIR/artifacts/ and
# named in the output. Prints each target's executions and time. A target may name its own
# count (TARGET=RUNS): the targets differ a hundredfold in executions per second.
#   usage: run_fuzzers.sh WORK_DIR RUNS [JOBS] [TARGET[=RUNS]...]
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
[[ $# -ge 2 ]] || { echo "usage: run_fuzzers.sh WORK_DIR RUNS [JOBS] [TARGET[=RUNS]...]" >&2; exit 2; }
work=$1 runs=$2 jobs=${3:-1}
[[ $runs =~ ^[1-9][0-9]*$ && $jobs =~ ^[1-9][0-9]*$ ]] \
  || { echo "run_fuzzers.sh: RUNS and JOBS must be positive integers" >&2; exit 2; }
shift $(( $# < 3 ? $# : 3 ))
targets=("$@")
(( ${#targets[@]} )) || targets=(safetensors model_config text request token_corpus checkpoint markup document)
declare -A target_runs
for i in "${!targets[@]}"; do
  name=${targets[$i]%%=*}
  target_runs[$name]=$runs
  [[ ${targets[$i]} == *=* ]] && target_runs[$name]=${targets[$i]#*=}
  [[ ${target_runs[$name]} =~ ^[1-9][0-9]*$ ]] \
    || { echo "run_fuzzers.sh: ${targets[$i]}: RUNS must be a positive integer" >&2; exit 2; }
  targets[$i]=$name
done
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

corpora=$(bash "$repo/tests/machine_cache_dir.sh" fuzz-corpus) || exit 1
# What other libraries keep (libgettextpo's leak of the contexts it reads) is not a finding.
export LSAN_OPTIONS=suppressions=$repo/tests/sanitize/lsan.supp:print_suppressions=0
run() {  # run TARGET RUNS: fuzz it for RUNS executions; the log is $work/TARGET.log
  local target=$1 runs=$2 corpus=$corpora/$1
  mkdir -p "$corpus"
  cp "$repo/tests/fuzz/corpus/$target"/* "$corpus/"
  local started=$SECONDS
  "$build/tests/fuzz/${target}_fuzzer" "$corpus" -runs="$runs" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/${target}-" > "$work/$target.log" 2>&1
  echo "seconds: $((SECONDS - started))" >> "$work/$target.log"
}
export -f run
export work build repo corpora
for target in "${targets[@]}"; do echo "$target ${target_runs[$target]}"; done \
  | xargs -P "$jobs" -L1 bash -c 'run "$0" "$1"'

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
    echo "ok: $target: $executions executions in $(sed -n 's/^seconds: //p' "$work/$target.log") s," \
         "$(ls "$corpora/$target" | wc -l) corpus inputs"
  fi
done
test "$failures" -eq 0
