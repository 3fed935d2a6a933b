#!/usr/bin/env bash
# The C++ unit tests and the process tests of the trainer and the server under
# AddressSanitizer + UndefinedBehaviorSanitizer: a build of their own (-DXLATE_SANITIZE=address,
# CPU only) of the GoogleTest suites, the xlate tool, xlate-trainer, xlate-server and its health
# probe, and the SentencePiece module, then CTest's labels there:
#   "unit": the engine's, kernels', trainer's, data's, evaluation's and communicators' suites,
#     the tiny-model fixture that the xlate tool trains, the xlate CLI test;
#   "server_unit": batching policy, scheduler, model registry;
#   "trainer_process": xlate-trainer's CLI test (ranks under mpiexec included) and the trainer
#     killed at random;
#   "server_process": xlate-server through gRPC clients (end to end, streaming, paragraphs,
#     models and reloads, alignment, Prometheus).
# The server has protobuf, so its SentencePiece module is built self-contained from a static
# SentencePiece (build_static_sentencepiece.sh): sanitizer runtimes refuse the RTLD_DEEPBIND
# that otherwise keeps the two protobufs apart. Any sanitizer report fails its test: UBSan
# aborts on the first finding (-fno-sanitize-recover), ASan on the first error, LeakSanitizer at
# exit (not in ranks under mpiexec: tests/trainer/trainer_harness.py says why; a server's
# reports fail the test that started it: tests/server/harness.py).
#   usage: run_sanitized_units.sh WORK_DIR [CTEST_ARGS...]
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
[[ $# -ge 1 ]] || { echo "usage: run_sanitized_units.sh WORK_DIR [CTEST_ARGS...]" >&2; exit 2; }
work=$1
shift
build=$work/build
mkdir -p "$work"
targets=(xlate xlate-trainer xlate-server xlate-health xlate_sentencepiece xlate_tests xlate_server_unit_tests
         xlate_kernel_tests xlate_evaluation_tests xlate_trainer_tests xlate_trainer_data_tests
         xlate_distributed_tests xlate_bucketed_all_reduce_tests)
# Built once per machine and SentencePiece version (tests/machine_cache_dir.sh), not per clone.
sentencepiece_version=$(dpkg-query -W -f='${Version}' libsentencepiece-dev) || exit 1
cache=$(bash "$repo/tests/machine_cache_dir.sh") || exit 1
sentencepiece=$(bash "$repo/tests/sanitize/build_static_sentencepiece.sh" \
                  "$cache/sentencepiece-static-$sentencepiece_version") || exit 1
# -O1 with line tables (-g1): the reports' stacks keep file and line, and the build takes about
# half the time of -O2 -g (ASan + UBSan instrumentation is most of a compile's time).
if ! { cmake -S "$repo" -B "$build" -DXLATE_SANITIZE=address -DXLATE_CUDA=OFF \
         -DXLATE_SENTENCEPIECE_STATIC_DIR="$sentencepiece" \
         -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
         > "$work/configure.log" 2>&1 &&
       cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" > "$work/build.log" 2>&1; }; then
  tail -n 30 "$work/configure.log" "$work/build.log"
  exit 1
fi
# allocator_may_return_null: an allocation too large for the machine throws std::bad_alloc, as
# without ASan, so that the tests of out-of-memory refusals test the code, not ASan's allocator.
export ASAN_OPTIONS=abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$repo/tests/sanitize/lsan.supp:print_suppressions=0
# Tests that limit the address space (ulimit -v) skip that part: ASan reserves terabytes of it.
export XLATE_SANITIZER=address
export OMP_NUM_THREADS=1
ctest --test-dir "$build" -L "^(unit|server_unit|trainer_process|server_process)$" -j"$(nproc)" \
  --output-on-failure "$@"
