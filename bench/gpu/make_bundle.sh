#!/usr/bin/env bash
# Packs what the GPU checks need into one folder for a GPU machine that has the NVIDIA driver and
# toolkit but none of xlate's Debian libraries: the test and benchmark binaries built here, the
# shared libraries they load (except glibc's and the driver's), the test fixtures and the
# newstest2014 text; and CTranslate2's wheel as .ct2site.tar.xz. bench/gpu/run_checks.sh runs
# there from the same folder (carry BUNDLE_DIR.tar.xz and .ct2site.tar.xz).
# usage: bench/gpu/make_bundle.sh [BUNDLE_DIR]   (default .gpu; run after scripts/build.sh and
# tests/make_fixtures.sh); also writes BUNDLE_DIR.tar.xz
set -euo pipefail
cd "$(dirname "$0")/../.."
bundle=${1:-.gpu}
data=../shared/data
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/data"

binaries=(build/tests/xlate_kernel_tests build/cli/xlate build/bench/xlate_translate_bench
          build/bench/xlate_ops_bench build/bench/xlate_training_ops_bench
          build/tests/trainer/xlate_trainer_tests build/cli/xlate-trainer
          build/tests/distributed/xlate_nccl_communicator_tests)
cp "${binaries[@]}" "$bundle/bin/"
# The SentencePiece module is dlopen'ed from bin/../lib (engine/sentencepiece_wrapper.cc).
cp build/lib/libxlate_sentencepiece.so "$bundle/lib/"

# Open MPI's launcher for the tests with several ranks on the GPU (the GPU machine has no MPI):
# Debian's Open MPI 4.1 and its PMIx under a prefix of Debian's layout, which OPAL_PREFIX and
# PMIX_INSTALL_PREFIX re-root there (bench/gpu/run_checks.sh sets them).
mpi=$bundle/mpi
openmpi_plugins=lib/x86_64-linux-gnu/openmpi/lib/openmpi3 pmix=lib/x86_64-linux-gnu/pmix2
mkdir -p "$mpi/bin" "$mpi/$openmpi_plugins" "$mpi/share" "$mpi/$pmix/lib"
cp /usr/bin/orterun /usr/bin/orted "$mpi/bin/"
ln -s orterun "$mpi/bin/mpiexec"
cp /usr/"$openmpi_plugins"/*.so "$mpi/$openmpi_plugins/"
cp -r /usr/share/openmpi "$mpi/share/"
cp -r /usr/"$pmix"/lib/pmix "$mpi/$pmix/lib/"
cp -r /usr/"$pmix"/share "$mpi/$pmix/"

# Every library the binaries, the module and the MPI plugins resolve, but for those the GPU
# machine provides (glibc, the CUDA driver); cuBLASLt and NCCL are dlopen'ed and come from the
# machine's toolkit or wheels (NCCL's 200 MB would not fit the bundle).
system_libraries='^(linux-vdso|libc\.so|libm\.so|libdl\.so|librt\.so|libpthread\.so|ld-linux|libcuda\.so)'
for file in "$bundle"/bin/* "$bundle"/lib/libxlate_sentencepiece.so "$mpi"/bin/orte* \
            "$mpi/$openmpi_plugins"/*.so "$mpi/$pmix"/lib/pmix/*.so; do
  ldd "$file" | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $system_libraries ]] || cp -L "$path" "$bundle/lib/$name"
done

cp -r build/fixtures/tiny "$bundle/data/tiny"
cp build/fixtures/test_2016_flickr.en "$bundle/data/"
cp "$data"/wmt14/newstest2014.{en,de} "$bundle/data/"
# Multi30k as the trainer's tests and benchmark read it (XLATE_DATA_DIR=$bundle/data).
cp -r "$data"/multi30k "$bundle/data/multi30k"
gzip -dc "$data"/multi30k/train.en.gz > "$bundle/data/train.en"
gzip -dc "$data"/multi30k/train.de.gz > "$bundle/data/train.de"
# The training benchmark's data (bench/compare_pytorch_training.py's: vocabulary 8,000), prepared
# here so that the GPU machine's lease does not pay the SentencePiece training (~40 s).
build/cli/xlate-trainer prepare --train_source "$data"/multi30k/train.en.gz \
  --train_target "$data"/multi30k/train.de.gz --output "$bundle/data/trainbench" \
  --vocab_size 8000 --max_length 100000 --max_length_ratio 0 > /dev/null  # no pair dropped
# The general corpus as `xlate-trainer prepare` wrote it for models/train-en-de-general.sh (the
# general stage of run_checks.sh), when XLATE_GENERAL_DATA names that data directory.
if [[ -n ${XLATE_GENERAL_DATA:-} ]]; then
  cp -r "$XLATE_GENERAL_DATA" "$bundle/data/general"
fi
# CTranslate2 for the GPU machine's Python 3.12, unpacked and recompressed (its wheel is 41 MiB
# as a zip, 25 MiB as .tar.xz): bench/gpu/run_checks.sh unpacks it into /tmp/site there.
ct2_version=${XLATE_CT2_VERSION:-4.8.5}
if [[ ! -f .ct2site.tar.xz ]]; then
  wheels=$(mktemp -d) site=$(mktemp -d)
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 -d "$wheels" "ctranslate2==$ct2_version"
  unzip -q "$wheels"/ctranslate2-*.whl -d "$site"
  tar -C "$site" -cJf .ct2site.tar.xz .
  rm -rf "$wheels" "$site"
fi

# One compressed file travels (the device tool carries at most 64 MiB).
tar -C "$(dirname "$bundle")" -cJf "$bundle.tar.xz" "$(basename "$bundle")"
du -sh "$bundle" "$bundle.tar.xz"
