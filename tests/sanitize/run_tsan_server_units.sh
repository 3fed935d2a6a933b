#!/usr/bin/env bash
# The server's unit tests (CTest label "server_unit": batching policy, scheduler, model
# registry with real models loading and reloading beside translations), and the caching
# allocators' group (GPU workers emptying each other's caches, over host memory), under
# ThreadSanitizer. ThreadSanitizer sees a lock only in instrumented code, and the scheduler's
# locks are absl::Mutex, whose code lives in Debian's (uninstrumented) libabsl_*.so: with those,
# every hand-over between the scheduler thread and its callers would look like a race, and a
# real race would hide among them. So this builds the very Abseil the machine has, from Debian's
# source package of the installed libabsl-dev (scripts/setup.sh enables the source index), with
# -fsanitize=thread as shared libraries of the same soname, and runs the tests with those first on
# LD_LIBRARY_PATH: every user of Abseil in the process then locks through instrumented code.
# FIXTURE_DIR is a test tree's fixtures folder (tests/make_fixtures.sh) with the tiny model that
# ModelRegistry's tests load: made by an ordinary build, since training its SentencePiece
# vocabulary under ThreadSanitizer takes tens of minutes.
#   usage: run_tsan_server_units.sh WORK_DIR FIXTURE_DIR [CTEST_ARGS...]
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
usage="usage: run_tsan_server_units.sh WORK_DIR FIXTURE_DIR [CTEST_ARGS...]"
[[ $# -ge 2 ]] || { echo "$usage" >&2; exit 2; }
mkdir -p "$1"
work=$(cd "$1" && pwd)
fixtures=$2
[[ -f $fixtures/tiny/model.safetensors && -f $fixtures/test_2016_flickr.en ]] \
  || { echo "run_tsan_server_units.sh: no tiny model in $fixtures (tests/make_fixtures.sh)" >&2; exit 1; }
shift 2
# Line tables are enough for the reports' stacks and halve the compile time of -O2 -g.
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")

build=$work/build
if ! { cmake -S "$repo" -B "$build" -DXLATE_SANITIZE=thread -DXLATE_CUDA=OFF "${flags[@]}" \
         > "$work/configure.log" 2>&1 &&
       cmake --build "$build" -j"$(nproc)" --target xlate_server_unit_tests \
         xlate_kernel_tests xlate_sentencepiece \
         > "$work/build.log" 2>&1; }; then
  tail -n 30 "$work/configure.log" "$work/build.log"
  exit 1
fi

version=$(dpkg-query -W -f='${Version}' libabsl-dev 2>/dev/null) \
  || { echo "run_tsan_server_units.sh: libabsl-dev is not installed (scripts/setup.sh)" >&2; exit 1; }
upstream=${version%%-*}       # 20220623.1-1+deb12u2 -> 20220623.1
soversion=${upstream%%.*}     # -> 20220623, the libraries' soname suffix
# The Abseil libraries the test's process loads, by CMake target name.
targets=$(ldd "$build/tests/xlate_server_unit_tests" | grep -o 'libabsl_[a-z0-9_]*\.so' \
          | sed 's/^libabsl_//; s/\.so$//' | sort -u)
# Built once per machine, Abseil version and set of libraries (tests/machine_cache_dir.sh).
cache=$(bash "$repo/tests/machine_cache_dir.sh") || exit 1
abseil=$cache/abseil-tsan-$version-$(echo "$targets" | sha256sum | cut -c1-12)
absl_lib=$abseil/lib
if [[ ! -f $absl_lib/complete ]]; then
  rm -rf "$abseil"
  source_dir=$(bash "$repo/tests/sanitize/debian_source.sh" libabsl-dev "$abseil/source") \
    || exit 1
  cd "$abseil"
  if ! { cmake -S "$source_dir" -B build -DCMAKE_CXX_STANDARD=17 -DBUILD_SHARED_LIBS=ON \
           "${flags[@]}" -DCMAKE_CXX_FLAGS=-fsanitize=thread \
           -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread > configure.log 2>&1 &&
         cmake --build build -j"$(nproc)" --target $targets > build.log 2>&1; }; then
    tail -30 configure.log build.log
    exit 1
  fi
  mkdir -p "$absl_lib"
  find build -name "libabsl_*.so.$soversion*" -exec cp -L {} "$absl_lib/" \;
  touch "$absl_lib/complete"
  rm -rf "$abseil/source" "$abseil/build"
fi

export LD_LIBRARY_PATH=$absl_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# The test is only as good as this: the process must take absl::Mutex from the instrumented build.
loaded=$(ldd "$build/tests/xlate_server_unit_tests" | awk '/libabsl_synchronization/ {print $3}')
if [[ $loaded != "$absl_lib/"* ]]; then
  echo "run_tsan_server_units.sh: libabsl_synchronization resolves to '$loaded', not $absl_lib" >&2
  exit 1
fi
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 history_size=4 suppressions=$repo/tests/sanitize/tsan.supp"
export OMP_NUM_THREADS=1
export XLATE_TINY_MODEL=$fixtures/tiny XLATE_SAMPLE_TEXT=$fixtures/test_2016_flickr.en
export XLATE_SCRATCH=$work/scratch
mkdir -p "$XLATE_SCRATCH"
# -FA: the fixture comes from FIXTURE_DIR, not from this tree.
ctest --test-dir "$build" -L "^server_unit$" -FA ".*" -j"$(nproc)" \
  --output-on-failure "$@"
status=$?
# The worker threads' caching allocators of one GPU, emptying each other's caches when the memory
# runs out (kernels/runtime/caching_allocator.h), over host memory.
"$build/tests/xlate_kernel_tests" --gtest_filter='AllocatorGroup.*:CachingAllocator.*' \
  --gtest_brief=1 || status=1
exit $status
