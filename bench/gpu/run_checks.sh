#!/usr/bin/env bash
# Runs on a GPU machine, from the repository root, over a bundle from bench/gpu/make_bundle.sh:
#   checks     the CUDA op and whole-model tests against the CPU reference, inference and
#              training (xlate_kernel_tests, xlate_trainer_tests), and NCCL with one rank
#              (xlate_nccl_communicator_tests)
#   sanitize   the CUDA tests under compute-sanitizer memcheck and racecheck
#   bench      newstest2014 on a base-size model: xlate float16/bfloat16 against CTranslate2
#              and Hugging Face MarianMT generate in the same precision, batches of 32 and 64
#              (XLATE_BENCH_TYPES, XLATE_BENCH_BATCHES; bench/compare_ctranslate2.py)
#   kernels    per-kernel device time of one decoding batch (Nsight Compute; after a bench
#              stage that ran float16 with batch 32, whose plan it reuses)
#   trainkernels  per-kernel device time of base-model training steps (Nsight Compute, on the
#              bundle's prepared training data; XLATE_TRAIN_PRECISION, default bf16;
#              XLATE_PROFILE_STEPS, default 3; XLATE_TRAIN_ACTIVATIONS=16bit for --activations)
#   torchkernels  the same for PyTorch's step (bench/pytorch_transformer_train.py, same data,
#              tokens per step and precision): the table to set trainkernels' against
#   engines    the server's engine (ContinuousDecoder) against Translator's batches on that
#              plan, float16 (xlate_translate_bench --engine continuous / batch)
#   training   the training ops at one base-model step against PyTorch's on the same GPU
#              (xlate_training_ops_bench, bench/gpu/torch_training_ops.py)
#   trainer    xlate-trainer --device cuda as a user runs it: resume bit-identity, validation
#              BLEU on the GPU, losses and checkpoints against the CPU's, one NCCL rank against
#              the plain run, an overflow skipped (test_trainer_cli.py TrainerGpuTest); the
#              tiny model trained 600 steps (test_training_converges.py); two GPU ranks under the
#              bundle's Open MPI, one killed with SIGKILL (test_trainer_killed.py)
#   multi30k   the default model's recipe (models/train-en-de-multi30k.sh) trained on the GPU
#              with --device auto, resumable (run the stage again if it hits its time limit:
#              XLATE_MULTI30K_SECONDS, default 480), then its BLEU on the Multi30k test sets
#              (models/evaluate-en-de-multi30k.sh) next to the shipped CPU-trained model's
#   general    issue 49's default model: models/train-en-de-general.sh at XLATE_GENERAL_SIZE
#              (default medium) on the bundle's prepared corpus (make_bundle.sh with
#              XLATE_GENERAL_DATA), stopped after XLATE_GENERAL_SECONDS (default 380; run the
#              stage again to resume), the last 5 checkpoints averaged into float16 at
#              /tmp/general/averaged
#   hfcuda     the Hugging Face fixtures of tests/data/hf translated on the GPU against the CPU
#              (greedy and beam 4) and transformers' greedy text (bench/gpu/hf_on_cuda.py)
#   overlap    the trainer's NCCL path with one rank on the GPU, base model, 25,000 tokens per
#              step: one call after the backward pass against 4 and 25 MiB buckets overlapped
#              with it (bench/data_parallel_overlap.py --gradient_reduction nccl); with one rank
#              the all-reduce is a copy, so this times the overlap machinery, not a network
#   trainbench the base model's training throughput against PyTorch's on the same GPU
#              (bench/compare_pytorch_training.py --device cuda; XLATE_TRAIN_TOKENS, default
#              50000 padded tokens per step, the paper's ~25k + 25k), and from it the projected
#              time to train on 8 GPUs (bench/project_time_to_train.py: time_to_train.md/.json);
#              XLATE_TRAIN_PRECISIONS the xlate runs (default fp32,fp16,bf16,fp16:16bit,bf16:16bit:
#              plain fp16/bf16 with --activations fp32, ":16bit" with 16bit, the trainer's default
#              under fp16/bf16); XLATE_TORCH_COMPILE lists the precisions PyTorch
#              also runs compiled in (default
#              bf16; empty: none; each compiles for a minute or more)
# usage: bench/gpu/run_checks.sh BUNDLE OUT_DIR STAGE... [-- extra compare_ctranslate2 flags]
# CTranslate2 (its wheel's files as .ct2site.tar.xz, made here with unzip + tar -cJ, since the
# device tool carries at most 64 MiB) is unpacked into /tmp/site. XLATE_BENCH_TYPES picks the
# precisions (default "float16 bfloat16"). Logs go to OUT_DIR; a short summary goes to stdout.
set -uo pipefail
bundle=$(realpath "$1") out=$(realpath "$2")
shift 2
stages=()
while (($#)) && [[ $1 != -- ]]; do stages+=("$1"); shift; done
[[ ${1:-} == -- ]] && shift
bench_flags=("$@")

# cuBLASLt (dlopen'ed by kernels/runtime/cublaslt_library.cc) from the machine's CUDA toolkit
# or wheels.
cublaslt=$(find / -xdev -name 'libcublasLt.so.1[0-9]*' 2>/dev/null | grep -v "$bundle" | head -1)
export LD_LIBRARY_PATH="$bundle/lib:$(dirname "$cublaslt"):${LD_LIBRARY_PATH:-}"
# NCCL (dlopen'ed by kernels/runtime/nccl_library.cc) likewise, e.g. from PyTorch's
# nvidia-nccl wheel.
nccl=$(find / -xdev -name 'libnccl.so.2*' 2>/dev/null | grep -v "$bundle" | head -1)
[[ -n $nccl ]] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$nccl")"
# Open MPI from the bundle (bench/gpu/make_bundle.sh), re-rooted where it was unpacked.
export OPAL_PREFIX=$bundle/mpi PMIX_INSTALL_PREFIX=$bundle/mpi/lib/x86_64-linux-gnu/pmix2
export XLATE_MPIEXEC=$bundle/mpi/bin/mpiexec
export XLATE_MPIEXEC_FLAGS="--allow-run-as-root;--oversubscribe;--bind-to;none;--mca;btl;self,vader;--mca;btl_vader_single_copy_mechanism;none;--timeout;300"
# Every CUDA test must run here: one that finds no GPU fails instead of skipping
# (tests/gpu_required.h, tests/trainer/trainer_harness.py).
export XLATE_EXPECT_GPU=1
export XLATE_TINY_MODEL=$bundle/data/tiny XLATE_SAMPLE_TEXT=$bundle/data/test_2016_flickr.en
export XLATE_SCRATCH=/tmp/xlate_scratch XLATE_TEST_DATA=$PWD/tests/data
mkdir -p "$XLATE_SCRATCH"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv | tee "$out/gpu.txt"
echo "cuBLASLt: $cublaslt"
tests=$bundle/bin/xlate_kernel_tests trainer_tests=$bundle/bin/xlate_trainer_tests
cuda_filter='OpsCuda*:*ModelCuda*:*Cuda*'
export XLATE_REPO=$PWD XLATE_TRAINER_BIN=$bundle/bin/xlate-trainer XLATE_BIN=$bundle/bin/xlate
export XLATE_DATA_DIR=$bundle/data XLATE_TRAINER_SCRATCH=/tmp/trainer_scratch
mkdir -p "$XLATE_TRAINER_SCRATCH"

base_model() {
  [[ -f /tmp/base/model.safetensors ]] && return
  "$bundle/bin/xlate" init-model --preset base --spm_from "$bundle/data/train.en,$bundle/data/train.de" \
    --vocab_size "${XLATE_BENCH_VOCAB:-16000}" --seed 1 --out /tmp/base > "$out/init_model.log" 2>&1
}

# Sets $plan to the plan a bench stage with float16 and batch 32 wrote; fails naming STAGE if none.
bench_plan() {
  plan=/tmp/work_float16_32/plan.tsv
  [[ -f $plan ]] && return
  echo "$1: needs the plan of a bench stage with float16 and batch 32 ($plan)" >&2
  return 1
}

# The training stages' data, prepared by make_bundle.sh (compare_pytorch_training.py reuses a
# workdir's data/ that has a corpus.json).
if [[ -f $bundle/data/trainbench/corpus.json && ! -f /tmp/trainbench/data/corpus.json ]]; then
  mkdir -p /tmp/trainbench && cp -r "$bundle/data/trainbench" /tmp/trainbench/data
fi

for stage in "${stages[@]}"; do
  case $stage in
    checks)
      # Time limits, so that a hang leaves the call time for the stages after it.
      timeout 240 "$tests" --gtest_filter="$cuda_filter" > "$out/checks.log" 2>&1
      echo "checks: exit $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|^\[==" "$out/checks.log"
      timeout 120 "$trainer_tests" --gtest_filter='*ModelCuda*' > "$out/checks_trainer.log" 2>&1
      echo "checks trainer: exit $?"
      grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|^\[==" "$out/checks_trainer.log"
      echo "NCCL: ${nccl:-not found}"
      timeout 120 "$bundle/bin/xlate_nccl_communicator_tests" > "$out/checks_nccl.log" 2>&1
      echo "checks nccl: exit $?"
      grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|^\[==" "$out/checks_nccl.log" ;;
    sanitize)
      # Every block an allocation of its own: memcheck sees past a block's end only then (the
      # caching allocator cuts segments into blocks).
      export XLATE_CUDA_MEMORY_CACHING=0
      # The three runs' limits add up to under one call's 600 s.
      for tool in memcheck racecheck; do
        filter=$cuda_filter limit=220
        # racecheck is slow: the ops' tests, float32 and 16-bit (the whole model adds no new
        # kernel).
        [[ $tool == racecheck ]] && filter='*OpsCuda*:*Ops16BitCuda*' limit=160
        timeout "$limit" compute-sanitizer --tool "$tool" --error-exitcode 9 "$tests" \
          --gtest_filter="$filter" > "$out/$tool.log" 2>&1
        echo "$tool: exit $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/$tool.log"
      done
      timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 "$trainer_tests" \
        --gtest_filter='*ModelCuda*' > "$out/memcheck_trainer.log" 2>&1
      echo "memcheck trainer: exit $?"; grep -E "ERROR SUMMARY" "$out/memcheck_trainer.log"
      unset XLATE_CUDA_MEMORY_CACHING ;;
    bench)
      base_model
      ct2_libs=/tmp/ct2_cuda12
      if [[ -f .ct2site.tar.xz ]]; then
        mkdir -p /tmp/site && tar -C /tmp/site -xJf .ct2site.tar.xz
        export PYTHONPATH=/tmp/site
        # The wheel is built for CUDA 12 and dlopens libcublas.so.12; this machine has CUDA 13's
        # cuBLAS only. The entry points CTranslate2 calls kept their ABI, so the CUDA 13 library
        # answers to the old name (a benchmark-only arrangement, stated in the results).
        mkdir -p "$ct2_libs"
        cublas=$(find / -xdev -name 'libcublas.so.1[0-9]*' 2>/dev/null | grep -v "$bundle" | head -1)
        ln -sf "$cublas" "$ct2_libs/libcublas.so.12"
        ln -sf "$cublaslt" "$ct2_libs/libcublasLt.so.12"
        export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$ct2_libs"
      fi
      for type in ${XLATE_BENCH_TYPES:-float16 bfloat16}; do
        for batch in ${XLATE_BENCH_BATCHES:-32 64}; do
          PYTHONUNBUFFERED=1 python3 bench/compare_ctranslate2.py --model_dir /tmp/base \
            --device cuda --compute_type "$type" --batch_size "$batch" \
            --source "$bundle/data/newstest2014.en" --reference "$bundle/data/newstest2014.de" \
            --xlate_bench "$bundle/bin/xlate_translate_bench" --work_dir "/tmp/work_${type}_$batch" \
            --json_out "$out/bench_${type}_$batch.json" "${bench_flags[@]}" \
            > "$out/bench_${type}_$batch.log" 2>&1
          echo "bench $type batch $batch: exit $?"; tail -6 "$out/bench_${type}_$batch.log"
        done
      done ;;
    engines)
      base_model
      bench_plan engines || continue
      for engine in batch continuous; do
        "$bundle/bin/xlate_translate_bench" --model_dir /tmp/base --device cuda \
          --compute_type float16 --plan "$plan" --engine "$engine" 2>&1 | tee "$out/engine_$engine.json"
      done ;;
    kernels)
      base_model
      bench_plan kernels || continue
      head -32 "$plan" > /tmp/plan_small.tsv
      ncu --metrics gpu__time_duration.sum --csv "$bundle/bin/xlate_translate_bench" \
        --model_dir /tmp/base --device cuda --compute_type float16 --plan /tmp/plan_small.tsv \
        --warmup_batches 0 > /tmp/kernels.csv 2> "$out/kernels.err"
      echo "kernels: exit $?"
      python3 bench/gpu/kernel_table.py /tmp/kernels.csv --plan /tmp/plan_small.tsv | tee "$out/kernels.txt" ;;
    trainkernels|torchkernels)
      # Per-kernel device time of base-model training steps (XLATE_TRAIN_PRECISION, default
      # bf16; XLATE_PROFILE_STEPS of XLATE_TRAIN_TOKENS), on the bundle's prepared data (or a
      # trainbench stage's); the clocks left as they run (--clock-control none).
      data=/tmp/trainbench/data steps=${XLATE_PROFILE_STEPS:-3}
      precision=${XLATE_TRAIN_PRECISION:-bf16} tokens=${XLATE_TRAIN_TOKENS:-50000}
      if [[ ! -f $data/corpus.json ]]; then
        echo "$stage: no prepared training data in $data (make_bundle.sh bundles it)" >&2
        continue
      fi
      if [[ $stage == trainkernels ]]; then
        rm -rf /tmp/trainkernels
        program=("$bundle/bin/xlate-trainer" train --data "$data" --output /tmp/trainkernels
                 --preset base --max_tokens "$tokens" --max_steps "$steps"
                 --validate_every_steps 0 --checkpoint_every_steps 0 --bleu_sentences 0
                 --device cuda --precision "$precision"
                 ${XLATE_TRAIN_ACTIVATIONS:+--activations "$XLATE_TRAIN_ACTIVATIONS"})
      else
        program=(python3 bench/pytorch_transformer_train.py --spm "$data/spm.model"
                 --source "$bundle/data/multi30k/train.en.gz"
                 --target "$bundle/data/multi30k/train.de.gz" --preset base
                 --max_tokens "$tokens" --steps "$steps" --warmup_steps 0 --device cuda
                 --precision "$precision")
      fi
      ncu --clock-control none --metrics gpu__time_duration.sum --csv "${program[@]}" \
        > "/tmp/$stage.csv" 2> "$out/$stage.err"
      echo "$stage: exit $?"
      python3 bench/gpu/kernel_table.py "/tmp/$stage.csv" --steps "$steps" | head -40 \
        | tee "$out/$stage.txt" ;;
    training)
      "$bundle/bin/xlate_training_ops_bench" --benchmark_min_time=0.3 > "$out/training_xlate.txt" 2>&1
      echo "training xlate: exit $?"; grep BM_ "$out/training_xlate.txt"
      PYTHONUNBUFFERED=1 python3 bench/gpu/torch_training_ops.py > "$out/training_torch.txt" 2>&1
      echo "training PyTorch: exit $?"; cat "$out/training_torch.txt" ;;
    trainer)
      timeout 300 python3 tests/trainer/test_trainer_cli.py TrainerGpuTest > "$out/trainer.log" 2>&1
      echo "trainer: exit $?"; grep -E "^test_|^OK|^FAILED|Error" "$out/trainer.log"
      # The tiny model's 600 steps in the GPU's default precision, as the CPU test trains it.
      timeout 200 python3 tests/trainer/test_training_converges.py \
        ShortTrainingTest.test_on_a_gpu_it_converges_as_on_the_cpu > "$out/converges.log" 2>&1
      echo "trainer converges on the GPU: exit $?"
      grep -E "^test_|training loss|^OK|^FAILED|Error" "$out/converges.log"
      # Two GPU ranks on the one GPU, one killed (Open MPI from the bundle).
      timeout 200 python3 tests/trainer/test_trainer_killed.py \
        KilledRank.test_sigkill_of_one_gpu_rank_ends_the_job_and_the_rerun_resumes_exactly \
        > "$out/trainer_killed.log" 2>&1
      echo "trainer killed GPU rank: exit $?"
      grep -E "^test_|killed: the job|^OK|^FAILED|Error" "$out/trainer_killed.log" ;;
    multi30k)
      XLATE_TRAINER=$bundle/bin/xlate-trainer timeout "${XLATE_MULTI30K_SECONDS:-480}" \
        bash models/train-en-de-multi30k.sh /tmp/multi30k > "$out/multi30k_train.log" 2>&1
      status=$?
      echo "multi30k train: exit $status"
      grep -E "^--device|^training on|^valid" "$out/multi30k_train.log" | tail -14
      cp /tmp/multi30k/train/train_log.jsonl "$out/multi30k_train_log.jsonl" 2>/dev/null
      if ((status == 0)); then
        for model in /tmp/multi30k/averaged models/en-de-multi30k; do
          echo "BLEU of $model:"
          bash models/evaluate-en-de-multi30k.sh "$model" | tee -a "$out/multi30k_bleu.md"
        done
      fi ;;
    general)
      run=/tmp/general
      if [[ ! -f $run/data/corpus.json ]]; then
        mkdir -p "$run" && cp -r "$bundle/data/general" "$run/data"
      fi
      XLATE_TRAINER=$bundle/bin/xlate-trainer XLATE_GENERAL_SIZE=${XLATE_GENERAL_SIZE:-medium} \
        timeout "${XLATE_GENERAL_SECONDS:-380}" bash models/train-en-de-general.sh "$run" \
        > "$out/general_train.log" 2>&1
      echo "general train: exit $? (124: stopped at its time limit, resumable)"
      grep -E "^--device|^training on|^valid" "$out/general_train.log" | tail -14
      grep '"event":"train"' "$run/train/train_log.jsonl" | tail -1
      cp "$run/train/train_log.jsonl" "$out/general_train_log.jsonl"
      rm -rf "$run/averaged"
      "$bundle/bin/xlate-trainer" average --last 5 --dtype F16 --source_lang en \
        --target_lang de --output "$run/averaged" "$run/train" > "$out/general_average.log" 2>&1
      echo "general average: exit $?"; tail -2 "$out/general_average.log" ;;
    hfcuda)
      PYTHONUNBUFFERED=1 python3 bench/gpu/hf_on_cuda.py --xlate "$bundle/bin/xlate" \
        --fixtures tests/data/hf --workdir /tmp/hfcuda > "$out/hfcuda.log" 2>&1
      echo "hfcuda: exit $?"; tail -12 "$out/hfcuda.log" ;;
    overlap)
      PYTHONUNBUFFERED=1 python3 bench/data_parallel_overlap.py --device cuda \
        --trainer "$bundle/bin/xlate-trainer" --data_dir "$bundle/data" --workdir /tmp/overlap \
        --mpirun "$XLATE_MPIEXEC" --ranks 1 --gradient_reduction nccl --bucket_mb 0,4,25 \
        --max_tokens "${XLATE_TRAIN_TOKENS:-25000}" --steps 6 --rounds 2 > "$out/overlap.log" 2>&1
      echo "overlap: exit $?"; grep -v '^{' "$out/overlap.log" | tail -8 ;;
    trainbench)
      PYTHONUNBUFFERED=1 python3 bench/compare_pytorch_training.py --device cuda \
        --trainer "$bundle/bin/xlate-trainer" --data_dir "$bundle/data" --workdir /tmp/trainbench \
        --max_tokens "${XLATE_TRAIN_TOKENS:-50000}" --steps 10 --warmup 2 \
        --xlate_precisions "${XLATE_TRAIN_PRECISIONS:-fp32,fp16,bf16,fp16:16bit,bf16:16bit}" \
        --torch_precisions fp32,fp16,bf16 \
        --torch_compile "${XLATE_TORCH_COMPILE-bf16}" \
        > "$out/trainbench.log" 2>&1
      echo "trainbench: exit $?"; grep -vE '^step |^\{' "$out/trainbench.log" | tail -12
      # The projected time to train the paper's models on 8 GPUs from xlate's throughput just
      # measured (the log's last line is the benchmark's JSON summary; the GPU, preset and
      # vocabulary come from its PyTorch entries; docs/data-parallel-training.md).
      python3 bench/project_time_to_train.py --measured_json "$out/trainbench.log" \
        --json_out "$out/time_to_train.json" 2> "$out/time_to_train.err" \
        | grep -v '^{' > "$out/time_to_train.md"
      echo "time to train: exit ${PIPESTATUS[0]}"
      cat "$out/time_to_train.err" "$out/time_to_train.md"
      # And from the fp32 run: what --precision auto trains in on a P100 (no tensor cores).
      python3 bench/project_time_to_train.py --measured_json "$out/trainbench.log" \
        --precision fp32 --json_out "$out/time_to_train_fp32.json" \
        2>> "$out/time_to_train.err" | grep -v '^{' > "$out/time_to_train_fp32.md"
      echo "time to train (fp32): exit ${PIPESTATUS[0]}"
      grep -E '^(Measured|\| 8 x P100)' "$out/time_to_train_fp32.md" ;;
    *) echo "unknown stage $stage" >&2; exit 2 ;;
  esac
done
