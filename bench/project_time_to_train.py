#!/usr/bin/env python3
"""Projected time to train the paper's base and big models data-parallel on 8 GPUs, from
xlate-trainer's measured single-GPU training throughput and published hardware figures.

Input: the throughput one GPU reached, either the last line of
bench/compare_pytorch_training.py's output (its JSON summary; the xlate entry of the chosen
precision is used; the GPU, preset and vocabulary come from its PyTorch entries, which ran on
the same GPU) or given by hand:

  python3 bench/project_time_to_train.py --measured_json trainbench.log
  python3 bench/project_time_to_train.py --tokens_per_second 150000 --precision bf16 \
      --measured_gpu h100-sxm --measured_tokens_per_step 48000

The model (docs/data-parallel-training.md, "Projected time to train on 8 GPUs"):
- A step is the paper's 25,000 source + 25,000 target tokens, the global batch: each of the 8
  GPUs computes 1/8 of it (6,250 tokens), then the GPUs all-reduce the fp32 gradient.
- Compute per token on a target GPU = the measured time per token scaled (a) by the ratio of
  published dense peak FLOP/s in the precision used and (b) by the ratio of published memory
  bandwidths. Both are reported; the projection takes the slower one (conservative).
- The big model's compute = the base model's scaled by the ratio of their training FLOPs per
  token, computed from the architectures (or the reverse when the big model was measured); the
  measured model's vocabulary (the bench's 8,000) is carried to the paper's 37,000 the same way.
- The all-reduce: a ring moves 2 (N - 1) / N of the gradient's bytes through every GPU's links;
  time = that / the published per-GPU bus bandwidth (nccl-tests' "busbw" definition).
- Two bounds: no overlap (compute + all-reduce), and the trainer's bucketed all-reduce
  overlapped with the backward pass; --hidden_fraction adds a third from a measured fraction.
- Scaling efficiency = one GPU's time for its 1/8 share without communication / the projected
  8-GPU step time.
Prints a Markdown report next to the paper's 0.4 s/step (12 h) and 1.0 s/step (3.5 days), and
NVIDIA's published throughputs; the last line is the same as one JSON object.
"""
import argparse
import json
import math

# ---------------------------------------------------------------------------------------------
# The paper (Vaswani et al. 2017, "Attention Is All You Need"; ../shared/paper/): section 5.1-5.2
# and Table 3.
PAPER_VOCABULARY = 37000            # "a shared source-target vocabulary of about 37000 tokens"
PAPER_TOKENS_PER_STEP = 50000       # "approximately 25000 source tokens and 25000 target tokens"
PAPER_GPUS = 8                      # "one machine with 8 NVIDIA P100 GPUs"
PAPER_RUNS = {
    # preset: (seconds per step on 8 P100, steps, the paper's total as it states it)
    "base": (0.4, 100000, "12 hours"),
    "big": (1.0, 300000, "3.5 days"),
}
PAPER_TABLE3_PARAMETERS = {"base": 65e6, "big": 213e6}  # Table 3, "params x10^6"

# The presets (engine/model_config.cc; DESIGN.md): encoder and decoder layers, d_model, d_ff,
# heads. The heads change neither the parameter count nor the FLOPs (d_k = d_v = d_model / h).
ARCHITECTURES = {
    "base": {"layers": 6, "d_model": 512, "d_ff": 2048, "heads": 8},
    "big": {"layers": 6, "d_model": 1024, "d_ff": 4096, "heads": 16},
}

# bench/compare_pytorch_training.py's default --vocab_size: the vocabulary the bundle's trainbench
# stage measures with, unless its summary says otherwise (its PyTorch entries carry vocab_size).
BENCH_VOCABULARY = 8000

# The trainer's default --bucket_mb (cli/trainer/train_command.cc): gradient buckets of at most
# 4 MiB, all-reduced while the backward pass goes on.
DEFAULT_BUCKET_MIB = 4.0

# Adam's memory traffic per parameter and step (trainer/optim/adam.h on the flat fp32 buffers):
# read parameter, gradient and both moments (16 bytes), write parameter and both moments
# (12 bytes), read the gradient once more for its norm (4) and zero it for the next step (4).
# This part of a step does not shrink when the tokens are split over the GPUs.
OPTIMIZER_BYTES_PER_PARAMETER = 36

# The backward pass does about twice the forward pass's matrix work (the gradients with respect
# to the inputs and to the weights), so a step's compute splits 1/3 forward, 2/3 backward; only
# the backward part can hide the all-reduce.
BACKWARD_FRACTION = 2.0 / 3.0

# ---------------------------------------------------------------------------------------------
# Published hardware figures. Everything this script takes from a vendor lives in these two
# tables, each with its source. TFLOP/s are dense peaks (never the "with sparsity" figures);
# "fp16"/"bf16" is the rate xlate's mixed-precision products run at: tensor cores where the GPU
# has them; on the P100 (no tensor cores, no bf16) its float32 rate, because xlate's products
# sum in float32 (its 2x half-precision peak is for half-precision sums, which xlate does not
# use). "fp32" is without tensor cores (xlate's fp32 runs have TF32 off). Bandwidths in
# GB/s = 1e9 bytes/s.
GPUS = {
    "p100-sxm2": {
        "name": "Tesla P100 SXM2 16GB", "nvidia_smi": ["tesla p100-sxm2-16gb"],
        "fp32": 10.6, "fp16": 10.6, "bf16": None, "memory_gbps": 732.0,
        # NVIDIA Tesla P100 datasheet (2016) and "NVIDIA Tesla P100" whitepaper (2016): 5.3 / 10.6 /
        # 21.2 TFLOP/s fp64 / fp32 / fp16 for the NVLink (SXM2) module (fp16 here: the fp32 rate,
        # see above); 16 GB CoWoS HBM2 at 732 GB/s (720 GB/s in the GTC 2016 announcement).
        "source": "NVIDIA Tesla P100 datasheet, 2016"},
    "p100-pcie": {
        "name": "Tesla P100 PCIe 16GB", "nvidia_smi": ["tesla p100-pcie-16gb"],
        "fp32": 9.3, "fp16": 9.3, "bf16": None, "memory_gbps": 732.0,
        # The same datasheet's PCIe card: lower clocks, 9.3 / 18.7 TFLOP/s fp32 / fp16 (fp16 here:
        # the fp32 rate), 16 GB at 732 GB/s.
        "source": "NVIDIA Tesla P100 datasheet, 2016"},
    "v100-sxm2": {
        "name": "Tesla V100 SXM2", "nvidia_smi": ["tesla v100-sxm2-16gb", "tesla v100-sxm2-32gb"],
        "fp32": 15.7, "fp16": 125.0, "bf16": None, "memory_gbps": 900.0,
        # NVIDIA Tesla V100 datasheet (2017/2018) and Volta whitepaper (2017): 125 tensor TFLOP/s
        # (fp16 inputs), 15.7 TFLOP/s fp32, HBM2 at 900 GB/s; no bf16 before Ampere.
        "source": "NVIDIA Tesla V100 datasheet, 2018"},
    "a100-sxm4-40gb": {
        "name": "A100 SXM4 40GB", "nvidia_smi": ["nvidia a100-sxm4-40gb"],
        "fp32": 19.5, "fp16": 312.0, "bf16": 312.0, "memory_gbps": 1555.0,
        # NVIDIA A100 datasheet (2020) and Ampere architecture whitepaper (2020): fp16 and bf16
        # tensor 312 TFLOP/s dense (624 with sparsity), fp32 19.5, HBM2 1,555 GB/s.
        "source": "NVIDIA A100 Tensor Core GPU datasheet, 2020"},
    "a100-sxm4-80gb": {
        "name": "A100 SXM4 80GB", "nvidia_smi": ["nvidia a100-sxm4-80gb"],
        "fp32": 19.5, "fp16": 312.0, "bf16": 312.0, "memory_gbps": 2039.0,
        # The same datasheet's 80 GB part: the same FLOP/s, HBM2e at 2,039 GB/s.
        "source": "NVIDIA A100 Tensor Core GPU datasheet, 2021 revision"},
    "h100-sxm": {
        "name": "H100 SXM5 80GB", "nvidia_smi": ["nvidia h100 80gb hbm3"],
        "fp32": 67.0, "fp16": 989.0, "bf16": 989.0, "memory_gbps": 3350.0,
        # NVIDIA H100 Tensor Core GPU datasheet (2022/2023), SXM column: fp16 and bf16 tensor
        # 1,979 TFLOP/s "with sparsity", i.e. 989 dense; fp32 67; HBM3 3.35 TB/s.
        "source": "NVIDIA H100 Tensor Core GPU datasheet, 2023"},
    "h200-sxm": {
        "name": "H200 SXM 141GB", "nvidia_smi": ["nvidia h200"],
        "fp32": 67.0, "fp16": 989.0, "bf16": 989.0, "memory_gbps": 4800.0,
        # NVIDIA H200 Tensor Core GPU datasheet (2023/2024), SXM column: the H100's compute
        # (1,979 TFLOP/s fp16/bf16 with sparsity = 989 dense, fp32 67), HBM3e 4.8 TB/s.
        "source": "NVIDIA H200 Tensor Core GPU datasheet, 2024"},
}

# Eight-GPU machines. bus_gbps is the per-GPU bandwidth, in one direction, that a ring
# all-reduce can use: nccl-tests' "bus bandwidth" (nccl-tests doc/PERFORMANCE.md: busbw =
# algbw x 2(n-1)/n, "should reflect the speed of the hardware bottleneck: NVLink, PCI, QPI, or
# network"), here its published peak. NCCL reaches less than peak: --bus_efficiency scales it.
SYSTEMS = {
    "dgx1-p100": {
        "name": "8 x P100 SXM2, NVLink 1 (DGX-1)", "gpu": "p100-sxm2", "bus_gbps": 80.0,
        # P100 datasheet/whitepaper (2016): 4 NVLink 1.0 links per GPU, 20 GB/s per direction
        # each (160 GB/s bidirectional per GPU). Assumed (not found stated for the P100 DGX-1):
        # NCCL's rings over the hybrid cube-mesh use all four links, 4 x 20 = 80 GB/s per
        # direction, as the DGX-1V whitepaper states for its six links (below).
        "source": "NVIDIA Tesla P100 whitepaper, 2016; NVIDIA DGX-1 system architecture "
                  "whitepaper, 2017"},
    "pcie-p100": {
        "name": "8 x P100 PCIe, PCIe 3.0 x16", "gpu": "p100-pcie", "bus_gbps": 15.75,
        # PCI Express 3.0 base specification (2010): 8 GT/s per lane, 128b/130b encoding:
        # 16 lanes x 8e9 x 128/130 / 8 = 15.75 GB/s per direction. What a machine reaches is
        # lower (PCIe switches, crossing between CPU sockets): measure it with nccl-tests.
        "source": "PCI Express Base Specification 3.0, PCI-SIG, 2010"},
    "dgx1-v100": {
        "name": "8 x V100 SXM2, NVLink 2 (DGX-1V)", "gpu": "v100-sxm2", "bus_gbps": 150.0,
        # DGX-1 with V100 system architecture whitepaper (2017): 6 NVLink 2.0 links per GPU,
        # 25 GB/s per direction each; the hybrid cube-mesh "can also be thought of as three
        # interwoven rings of single NVLink connections", which together use all 6 links:
        # 6 x 25 = 150 GB/s per direction (300 GB/s bidirectional, the V100 datasheet's figure).
        "source": "NVIDIA DGX-1 with Tesla V100 system architecture whitepaper, 2017"},
    "dgx-a100": {
        "name": "8 x A100 SXM4 40GB, NVSwitch (DGX A100)", "gpu": "a100-sxm4-40gb",
        "bus_gbps": 300.0,
        # A100 datasheet and Ampere whitepaper (2020): 12 NVLink 3 links, 600 GB/s total
        # (bidirectional) per GPU through NVSwitch, 300 GB/s per direction.
        "source": "NVIDIA A100 datasheet, 2020; NVIDIA Ampere architecture whitepaper, 2020"},
    "dgx-h100": {
        "name": "8 x H100 SXM5, NVSwitch (DGX H100)", "gpu": "h100-sxm", "bus_gbps": 450.0,
        # H100 datasheet (2023): 18 NVLink 4 links, 900 GB/s total per GPU, 450 per direction.
        "source": "NVIDIA H100 Tensor Core GPU datasheet, 2023"},
}

# Published training throughputs of other implementations, for comparison only. NVIDIA
# DeepLearningExamples, PyTorch/Translation/Transformer/README.md (fairseq-based; the big model,
# transformer_wmt_en_de_big_t2t; pytorch-22.06-py3 container; "Performance numbers (in tokens per
# second) were averaged over an entire training epoch"). Its tokens are the batch's `ntokens`,
# i.e. target tokens only (fairseq/data/data_utils.py collate), while xlate counts source +
# target tokens.
PUBLISHED_THROUGHPUT = [
    {"system": "8 x V100 16GB (DGX-1), mixed precision", "target_tokens_per_second": 214656,
     "single_gpu": 32942, "source": "NVIDIA DeepLearningExamples Transformer PyTorch README, "
                                    "DGX-1 (8x V100 16GB) training performance table"},
    {"system": "8 x V100 16GB (DGX-1), FP32", "target_tokens_per_second": 59316,
     "single_gpu": 8742, "source": "same table"},
    {"system": "8 x A100 40GB (DGX A100), mixed precision", "target_tokens_per_second": 551599,
     "single_gpu": 82059, "source": "NVIDIA DeepLearningExamples Transformer PyTorch README, "
                                    "DGX A100 (8x A100 40GB) training performance table"},
    {"system": "8 x A100 40GB (DGX A100), TF32", "target_tokens_per_second": 347936,
     "single_gpu": 51057, "source": "same table"},
]

PRECISIONS = ("fp32", "fp16", "bf16")


# ---------------------------------------------------------------------------------------------
# The model's size and work.

def parameter_counts(preset, vocabulary=PAPER_VOCABULARY):
    """Trainable parameters of a preset, by part, as the trainer lays them out
    (engine/model_weights.h): one shared embedding [V, d] that is also the output projection,
    the output bias [V], and per layer linear weights with biases and LayerNorm gain and bias.
    The sinusoidal position tables are fixed (no gradient) and not counted."""
    a = ARCHITECTURES[preset]
    d, f, n = a["d_model"], a["d_ff"], a["layers"]
    attention = 4 * (d * d + d)                 # query, key, value, output projections + biases
    ffn = (d * f + f) + (f * d + d)             # inner and outer layers + biases
    norm = 2 * d                                # LayerNorm gain and bias
    encoder_layer = attention + norm + ffn + norm
    decoder_layer = 2 * attention + 3 * norm + ffn  # self- and cross-attention, three norms
    counts = {"embedding": vocabulary * d, "output_bias": vocabulary,
              "encoder": n * encoder_layer, "decoder": n * decoder_layer}
    counts["total"] = sum(counts.values())
    return counts


def training_flops_per_token(preset, vocabulary=PAPER_VOCABULARY, sentence_tokens=30):
    """Training FLOPs per token (source and target tokens counted alike, as many of each, the
    paper's 25k + 25k), from the architecture.

    Every weight matrix of shape [m, k] that a token passes through costs 2 m k FLOPs forward
    (a multiply and an add per weight); training costs 3 times the forward pass (the backward
    pass computes the gradients with respect to the inputs and to the weights, 2 m k each): the
    usual ~6 FLOPs per weight per token. Which weights a token passes:
      source token: every encoder layer (4 d^2 attention + 2 d d_ff FFN), and the decoder's
        cross-attention key and value projections of the encoder output (2 d^2 per layer);
      target token: every decoder layer (4 d^2 self-attention, 2 d^2 cross-attention query and
        output, 2 d d_ff FFN) and the output projection (d V).
    Plus the attention scores: Q K^T and the weighted sum of V cost 2 L d each per query token
    and attention (L = attended length): one self-attention per encoder layer, self- and
    cross-attention per decoder layer. L = sentence_tokens (an assumption; these terms are ~1%
    of the total at L = 30, so the result barely depends on it). Biases, LayerNorm, softmax,
    dropout and the loss are elementwise: no matrix FLOPs, left out."""
    a = ARCHITECTURES[preset]
    d, f, n, length = a["d_model"], a["d_ff"], a["layers"], sentence_tokens
    scores = 2 * 2 * length * d                               # Q K^T and the weighted sum of V
    source = n * (2 * 4 * d * d + 2 * 2 * d * f + scores) + n * 2 * 2 * d * d
    target = n * (2 * 4 * d * d + 2 * 2 * d * d + 2 * 2 * d * f + 2 * scores) + 2 * d * vocabulary
    return 3 * (source + target) / 2


# ---------------------------------------------------------------------------------------------
# The projection.

def ring_all_reduce_seconds(gradient_bytes, gpus, bus_bytes_per_second):
    """A ring all-reduce of `gradient_bytes` over `gpus` GPUs: reduce-scatter then all-gather,
    each sending (N - 1)/N of the bytes out of every GPU, 2 (N - 1)/N in all, at the per-GPU
    bus bandwidth (seconds; nccl-tests doc/PERFORMANCE.md)."""
    return 2.0 * (gpus - 1) / gpus * gradient_bytes / bus_bytes_per_second


def peak_flops(gpu_key, precision):
    """Dense peak FLOP/s of a GPU in a precision; None where the GPU lacks it (bf16 before
    Ampere)."""
    tflops = GPUS[gpu_key][precision]
    return None if tflops is None else tflops * 1e12


def training_precision(gpu_key, measured_precision):
    """What the trainer would train in on a target GPU, given the measured run's precision:
    fp32 stays fp32; mixed precision is bf16 where the GPU has it (sm_80+) and fp16 with loss
    scaling where it does not (P100, V100; DESIGN.md, "Training on GPUs")."""
    if measured_precision == "fp32":
        return "fp32"
    return "bf16" if GPUS[gpu_key]["bf16"] is not None else "fp16"


def compute_scalings(measured, target_gpu):
    """Seconds per token on `target_gpu` (the per-token compute, the optimizer excluded), scaled
    from the measured GPU by the ratio of peak FLOP/s and by the ratio of memory bandwidths."""
    precision = training_precision(target_gpu, measured["precision"])
    by_flops = measured["seconds_per_token"] * (peak_flops(measured["gpu"], measured["precision"])
                                                / peak_flops(target_gpu, precision))
    by_bandwidth = measured["seconds_per_token"] * (GPUS[measured["gpu"]]["memory_gbps"]
                                                    / GPUS[target_gpu]["memory_gbps"])
    return precision, by_flops, by_bandwidth


def optimizer_seconds(parameters, gpu_key):
    """Adam's update of every parameter, bounded by memory bandwidth (it streams the buffers)."""
    return parameters * OPTIMIZER_BYTES_PER_PARAMETER / (GPUS[gpu_key]["memory_gbps"] * 1e9)


def step_times(compute_seconds, optimizer, comm_total, comm_last, hidden_fraction=None):
    """One data-parallel step from its parts (seconds):
      no overlap: compute, then the whole all-reduce, then the optimizer;
      overlapped: the forward pass; the backward pass with the all-reduce of every bucket but
        the last behind it (whichever takes longer); then the last bucket, which can only start
        when the backward pass has finished; then the optimizer;
      measured: compute + the exposed part (1 - hidden_fraction) of the all-reduce + optimizer."""
    forward = compute_seconds * (1.0 - BACKWARD_FRACTION)
    backward = compute_seconds * BACKWARD_FRACTION
    times = {
        "no_overlap": compute_seconds + comm_total + optimizer,
        "overlapped": forward + max(backward, comm_total - comm_last) + comm_last + optimizer,
    }
    if hidden_fraction is not None:
        exposed = (1.0 - hidden_fraction) * comm_total
        times["measured_hiding"] = compute_seconds + exposed + optimizer
    return times


def last_bucket_bytes(preset, bucket_mib, vocabulary=PAPER_VOCABULARY):
    """Bytes of gradient the all-reduce can only start once the backward pass is over. The
    shared embedding is also the output projection: its gradient is final only after the
    source and target embedding lookups' backward, the very end of the pass
    (docs/data-parallel-training.md), so all of it waits, in bucket-sized pieces or not. A bucket
    larger than the embedding waits with the parameters it takes in; --bucket_mb 0 is one bucket
    of everything (no overlap)."""
    counts = parameter_counts(preset, vocabulary)
    gradient = 4 * counts["total"]
    if bucket_mib == 0:
        return gradient
    return min(gradient, max(4 * counts["embedding"], bucket_mib * 2**20))


def project(measured, preset, system_key, gpus=8, tokens_per_step=PAPER_TOKENS_PER_STEP,
            bucket_mib=DEFAULT_BUCKET_MIB, bus_efficiency=1.0, hidden_fraction=None,
            bus_gbps=None, vocabulary=PAPER_VOCABULARY, sentence_tokens=30):
    """The projection of one model on one system of `gpus` GPUs; times in seconds. `bus_gbps`
    overrides the system's published bus bandwidth (GB/s)."""
    system = SYSTEMS[system_key]
    gpu = system["gpu"]
    counts = parameter_counts(preset, vocabulary)
    # The measured run's per-token time applies to the measured preset and vocabulary; another
    # preset's tokens, or the paper's vocabulary (an output projection of d x V per target
    # token), cost more or less by the ratio of their FLOPs per token.
    model_ratio = (training_flops_per_token(preset, vocabulary, sentence_tokens)
                   / training_flops_per_token(measured["preset"], measured["vocabulary"],
                                              sentence_tokens))
    precision, per_token_flops, per_token_bandwidth = compute_scalings(measured, gpu)
    tokens_per_gpu = tokens_per_step / gpus
    compute_by_flops = per_token_flops * model_ratio * tokens_per_gpu
    compute_by_bandwidth = per_token_bandwidth * model_ratio * tokens_per_gpu
    compute = max(compute_by_flops, compute_by_bandwidth)      # the conservative projection
    optimizer = optimizer_seconds(counts["total"], gpu)
    bus = (system["bus_gbps"] if bus_gbps is None else bus_gbps) * 1e9 * bus_efficiency
    gradient = 4 * counts["total"]                              # fp32 gradient, bytes
    comm_total = ring_all_reduce_seconds(gradient, gpus, bus)
    comm_last = ring_all_reduce_seconds(last_bucket_bytes(preset, bucket_mib, vocabulary), gpus,
                                        bus)
    steps = step_times(compute, optimizer, comm_total, comm_last, hidden_fraction)
    # The faster compute scaling leaves the all-reduce relatively larger: the lowest efficiency.
    fast = step_times(min(compute_by_flops, compute_by_bandwidth), optimizer, comm_total, comm_last)
    alone = compute + optimizer        # one GPU's share of the step with no communication
    alone_fast = min(compute_by_flops, compute_by_bandwidth) + optimizer
    run_steps = PAPER_RUNS[preset][1]
    result = {
        "system": system_key, "system_name": system["name"], "gpu": gpu, "preset": preset,
        "gpus": gpus, "precision": precision, "tokens_per_gpu_per_step": tokens_per_gpu,
        "compute_s_by_flops": compute_by_flops, "compute_s_by_bandwidth": compute_by_bandwidth,
        "compute_s": compute, "optimizer_s": optimizer, "bus_gbps": bus / 1e9,
        "gradient_bytes": gradient, "all_reduce_s": comm_total, "last_bucket_s": comm_last,
        "step_s": steps,
        "efficiency": {name: alone / t for name, t in steps.items()},
        "lowest_efficiency": alone_fast / fast["no_overlap"],
        "hours": {name: run_steps * t / 3600 for name, t in steps.items()},
        "tokens_per_second": {name: tokens_per_step / t for name, t in steps.items()},
    }
    return result


# ---------------------------------------------------------------------------------------------
# Input.

def resolve_gpu(parser, name):
    """A GPU key from a key or an nvidia-smi name (exact, case-insensitive)."""
    wanted = name.strip().lower()
    for key, gpu in GPUS.items():
        if wanted == key or wanted in gpu["nvidia_smi"]:
            return key
    known = ", ".join(f"{key} ({GPUS[key]['nvidia_smi'][0]})" for key in GPUS)
    parser.error(f"--measured_gpu {name!r} is not a known GPU; known: {known}")


def read_measurement(parser, args):
    """The measured run: tokens/s, precision, tokens per step, from the JSON or the flags; and
    what the JSON says about the run beyond xlate's entries (`context`): compare_pytorch_training
    runs PyTorch on the same GPU, preset and vocabulary, and PyTorch's entries name them."""
    context = {}
    if args.measured_json is not None:
        try:
            with open(args.measured_json, encoding="utf-8") as f:
                lines = [line.strip() for line in f if line.strip()]
        except OSError as error:
            parser.error(f"--measured_json {args.measured_json}: cannot read it ({error.strerror})")
        if not lines:
            parser.error(f"--measured_json {args.measured_json}: the file is empty")
        try:
            summary = json.loads(lines[-1])
        except json.JSONDecodeError:
            parser.error(f"--measured_json {args.measured_json}: its last line is not JSON "
                         "(expected bench/compare_pytorch_training.py's summary "
                         f"{{\"results\": [...], \"ratio\": ...}}): {lines[-1][:80]!r}")
        if not isinstance(summary, dict) or not isinstance(summary.get("results"), list):
            parser.error(f"--measured_json {args.measured_json}: the last line has no "
                         "\"results\" list (expected compare_pytorch_training.py's summary)")
        results = [r for r in summary["results"] if isinstance(r, dict)]
        xlate = [r for r in results if r.get("system") == "xlate"]
        if not xlate:
            systems = sorted({str(r.get("system")) for r in results}) or ["none"]
            parser.error(f"--measured_json {args.measured_json}: no xlate entry in its results "
                         f"(systems: {', '.join(systems)})")
        gpu_runs = [r for r in xlate if r.get("device") == "cuda"]
        if not gpu_runs:
            devices = sorted({str(r.get("device")) for r in xlate})
            parser.error(f"--measured_json {args.measured_json}: xlate was measured on "
                         f"{', '.join(devices)}; the projection needs a GPU (cuda) measurement")
        if args.precision is None:
            # The fastest xlate run: mixed precision where it was measured.
            entry = max(gpu_runs, key=lambda r: r.get("tokens_per_second") or 0)
        else:
            matching = [r for r in gpu_runs if r.get("precision", "fp32") == args.precision]
            if not matching:
                have = ", ".join(sorted({r.get("precision", "fp32") for r in gpu_runs}))
                parser.error(f"--measured_json {args.measured_json}: no xlate {args.precision} "
                             f"entry (precisions: {have})")
            entry = matching[0]
        try:
            tokens_per_second = float(entry["tokens_per_second"])
            tokens_per_step = float(entry["tokens"]) / float(entry["steps"])
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            parser.error(f"--measured_json {args.measured_json}: the xlate entry lacks "
                         "tokens_per_second, tokens or steps")
        precision = entry.get("precision", "fp32")
        # The fastest run may be one with --activations 16bit: the projection says so.
        context["activations"] = entry.get("activations", "fp32")
        if args.measured_tokens_per_step is not None:
            tokens_per_step = args.measured_tokens_per_step
        for r in results:
            if r.get("system") != "xlate" and r.get("device") == "cuda":
                for key in ("gpu", "preset", "vocab_size", "parameters"):
                    if r.get(key) is not None:
                        context.setdefault(key, r[key])
    else:
        if args.precision is None:
            parser.error("--tokens_per_second needs --precision (fp32, fp16 or bf16)")
        tokens_per_second = args.tokens_per_second
        precision = args.precision
        # The bundle's trainbench default: the paper's step size on one GPU.
        tokens_per_step = (args.measured_tokens_per_step if args.measured_tokens_per_step
                           is not None else float(PAPER_TOKENS_PER_STEP))
    if not tokens_per_second > 0 or not math.isfinite(tokens_per_second):
        parser.error(f"the measured throughput must be a positive number of tokens/s, "
                     f"not {tokens_per_second}")
    if not tokens_per_step > 0:
        parser.error(f"the measured tokens per step must be positive, not {tokens_per_step}")
    return tokens_per_second, precision, tokens_per_step, context


def measurement(parser, args):
    """The measured run as the projection uses it: per-token seconds without the optimizer."""
    tokens_per_second, precision, tokens_per_step, context = read_measurement(parser, args)
    gpu_name = args.measured_gpu or context.get("gpu")
    if gpu_name is None:
        parser.error("--measured_gpu is needed: the measurement names no GPU (known: "
                     f"{', '.join(GPUS)})")
    gpu = resolve_gpu(parser, gpu_name)
    preset = args.measured_preset or context.get("preset", "base")
    if preset not in ARCHITECTURES:
        parser.error(f"the measured preset {preset!r} is not one of {', '.join(ARCHITECTURES)}")
    vocabulary = args.measured_vocabulary or context.get("vocab_size", BENCH_VOCABULARY)
    if not isinstance(vocabulary, int) or vocabulary <= 0:
        parser.error(f"the measured vocabulary must be a positive integer, not {vocabulary!r}")
    if peak_flops(gpu, precision) is None:
        parser.error(f"{GPUS[gpu]['name']} has no {precision}; the measured precision must be "
                     "one the GPU runs")
    step = tokens_per_step / tokens_per_second
    parameters = parameter_counts(preset, vocabulary)["total"]
    optimizer = optimizer_seconds(parameters, gpu)
    if optimizer >= step:
        parser.error(f"the measured step ({step * 1e3:.2f} ms for {tokens_per_step:.0f} tokens) "
                     f"is shorter than the optimizer's memory traffic alone "
                     f"({optimizer * 1e3:.2f} ms): check the throughput and the tokens per step")
    return {"gpu": gpu, "precision": precision,
            "activations": context.get("activations", "fp32"), "preset": preset,
            "vocabulary": vocabulary, "parameters": parameters, "pytorch_parameters": context.get("parameters"),
            "tokens_per_second": tokens_per_second, "tokens_per_step": tokens_per_step,
            "seconds_per_step": step, "optimizer_s": optimizer,
            "seconds_per_token": (step - optimizer) / tokens_per_step}


# ---------------------------------------------------------------------------------------------
# Output.

def format_duration(hours):
    return f"{hours:,.1f} h" if hours < 48 else f"{hours / 24:,.2f} days"


def markdown(measured, args, projections):
    lines = []
    add = lines.append
    gpu = GPUS[measured["gpu"]]
    flops = {p: training_flops_per_token(p, args.vocabulary, args.sentence_tokens)
             for p in ARCHITECTURES}
    achieved = measured["tokens_per_second"] * training_flops_per_token(
        measured["preset"], measured["vocabulary"], args.sentence_tokens)
    add(f"# Projected time to train on {args.gpus} GPUs")
    add("")
    add(f"Measured: xlate-trainer, {measured['preset']} model (vocabulary "
        f"{measured['vocabulary']:,}, {measured['parameters'] / 1e6:.1f} M parameters"
        + (f"; PyTorch counted {measured['pytorch_parameters'] / 1e6:.1f} M for the same model"
           if measured["pytorch_parameters"] else "") + f"), {measured['precision']}"
        + (", 16-bit activations" if measured["activations"] == "16bit" else "") + ", one "
        f"{gpu['name']}: {measured['tokens_per_second']:,.0f} tokens/s (source + target) at "
        f"{measured['tokens_per_step']:,.0f} tokens/step, "
        f"{measured['seconds_per_step']:.3f} s/step "
        f"({achieved / 1e12:.1f} model TFLOP/s, "
        f"{achieved / peak_flops(measured['gpu'], measured['precision']):.1%} of the "
        f"{gpu[measured['precision']]:g} TFLOP/s peak).")
    per_gpu = args.tokens_per_step / args.gpus
    if measured["tokens_per_step"] > 2 * per_gpu:
        add(f"Note: measured at {measured['tokens_per_step']:,.0f} tokens/step, but each GPU "
            f"computes {per_gpu:,.0f} tokens/step here; smaller batches usually run at fewer "
            "tokens/s, so the compute below is optimistic. Measure with --max_tokens near "
            f"{per_gpu:,.0f} too.")
    add("")
    add("| model | parameters (paper, Table 3) | fp32 gradient | training FLOPs per token |")
    add("|---|---|---|---|")
    for preset in ARCHITECTURES:
        counts = parameter_counts(preset, args.vocabulary)
        paper = PAPER_TABLE3_PARAMETERS[preset] / 1e6
        add(f"| {preset} | {counts['total'] / 1e6:.1f} M ({paper:.0f} M) | "
            f"{4 * counts['total'] / 1e6:,.0f} MB | {flops[preset] / 1e6:,.1f} M |")
    add("")
    batch = ("the paper's 50,000 tokens per step (25,000 source + 25,000 target)"
             if args.tokens_per_step == PAPER_TOKENS_PER_STEP else
             f"{args.tokens_per_step:,.0f} tokens per step (the paper's: 50,000)")
    add(f"- Batch: {batch} over {args.gpus} GPUs: {per_gpu:,.0f} tokens per GPU per step.")
    add("- Compute: the measured time per token scaled by the ratio of dense peak FLOP/s "
        "(\"by FLOP/s\") and by the ratio of memory bandwidths (\"by bandwidth\"); the projection "
        "takes the slower. Adam's update (memory-bound, not split over the GPUs) is added.")
    scaled = "" if args.bus_efficiency == 1 else f" x {args.bus_efficiency:g}"
    add(f"- All-reduce: fp32 gradient through a ring, 2 (N - 1)/N x bytes / bus bandwidth "
        f"(the published per-GPU peak{scaled}). Overlapped: buckets of "
        f"{args.bucket_mb:g} MiB behind the backward pass; the shared embedding's gradient "
        "(final last) is exposed.")
    add("- Efficiency: one GPU's share of the step without communication / the projected step. "
        "\"Lowest\": no overlap, with the faster compute scaling.")
    for preset, (paper_step, run_steps, paper_total) in PAPER_RUNS.items():
        add("")
        add(f"## {preset.capitalize()} model: {run_steps:,} steps (paper: {paper_step} s/step on "
            f"8 P100, {paper_total})")
        add("")
        hidden = args.hidden_fraction is not None
        header = ("| 8-GPU system | precision | compute s/step by FLOP/s | by bandwidth | "
                  "all-reduce s | step s, no overlap | step s, overlapped |")
        rule = "|---|---|---|---|---|---|---|"
        if hidden:
            header += f" step s, {args.hidden_fraction:.0%} hidden |"
            rule += "---|"
        header += " efficiency, no overlap | overlapped |"
        rule += "---|---|"
        if hidden:
            header += f" {args.hidden_fraction:.0%} hidden |"
            rule += "---|"
        header += (" lowest | >= 90 % | time, no overlap | time, overlapped | "
                   "target tokens/s, overlapped |")
        rule += "---|---|---|---|---|"
        add(header)
        add(rule)
        for p in projections:
            if p["preset"] != preset:
                continue
            s, e, h = p["step_s"], p["efficiency"], p["hours"]
            if p["lowest_efficiency"] >= 0.9:
                meets = "yes"
            elif e["overlapped"] >= 0.9:
                meets = "overlapped"
            else:
                meets = "no"
            row = (f"| {p['system_name']} | {p['precision']} | {p['compute_s_by_flops']:.4f} | "
                   f"{p['compute_s_by_bandwidth']:.4f} | {p['all_reduce_s']:.4f} | "
                   f"{s['no_overlap']:.4f} | {s['overlapped']:.4f} |")
            if hidden:
                row += f" {s['measured_hiding']:.4f} |"
            row += f" {e['no_overlap']:.1%} | {e['overlapped']:.1%} |"
            if hidden:
                row += f" {e['measured_hiding']:.1%} |"
            row += (f" {p['lowest_efficiency']:.1%} | {meets} | "
                    f"{format_duration(h['no_overlap'])} | "
                    f"{format_duration(h['overlapped'])} | "
                    f"{p['tokens_per_second']['overlapped'] / 2:,.0f} |")
            add(row)
        paper_tokens = PAPER_TOKENS_PER_STEP / paper_step
        add("| paper (Vaswani et al. 2017): 8 x P100 | – | – | – | – | "
            f"{paper_step} (measured) "
            f"| {paper_step} (measured) |" + (" – |" if hidden else "") + " – | – |" +
            (" – |" if hidden else "") +
            f" – | – | {paper_total} | {paper_total} | {paper_tokens / 2:,.0f} |")
        if preset == "big":
            for ref in PUBLISHED_THROUGHPUT:
                # Its time for this projection's step (half of its tokens are target tokens).
                seconds = (args.tokens_per_step / 2) / ref["target_tokens_per_second"]
                scaling = ref["target_tokens_per_second"] / (8 * ref["single_gpu"])
                add(f"| NVIDIA DeepLearningExamples (fairseq), {ref['system']} | "
                    "– | – | – | – | "
                    f"{seconds:.4f} | {seconds:.4f} |" + (" – |" if hidden else "") +
                    f" – | {scaling:.1%} (8 vs 1 GPU) |" + (" – |" if hidden else "") +
                    f" – | – | {format_duration(run_steps * seconds / 3600)} | "
                    f"{format_duration(run_steps * seconds / 3600)} | "
                    f"{ref['target_tokens_per_second']:,} |")
    add("")
    add("Sources: GPU and interconnect figures from the vendors' datasheets and whitepapers named "
        "in bench/project_time_to_train.py (GPUS, SYSTEMS); NVIDIA's throughputs from "
        "DeepLearningExamples' PyTorch Transformer README (big model, target tokens only, its "
        "own batch per GPU).")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--measured_json",
                        help="a file whose last line is bench/compare_pytorch_training.py's JSON "
                             "summary (its whole log will do)")
    source.add_argument("--tokens_per_second", type=float,
                        help="measured source+target tokens/s of xlate-trainer on one GPU")
    parser.add_argument("--precision", choices=PRECISIONS,
                        help="the measured run's precision (with --measured_json: which xlate "
                             "entry; default the fastest)")
    parser.add_argument("--measured_gpu",
                        help=f"the measured GPU: one of {', '.join(GPUS)}, or its nvidia-smi name "
                             "(default: the GPU the JSON's PyTorch entries name)")
    parser.add_argument("--measured_tokens_per_step", type=float,
                        help="tokens per step of the measured run (default: from the JSON, else "
                             f"{PAPER_TOKENS_PER_STEP})")
    parser.add_argument("--measured_preset", choices=list(ARCHITECTURES),
                        help="the preset the throughput was measured on (default: the JSON's, "
                             "else base)")
    parser.add_argument("--measured_vocabulary", type=int,
                        help="the measured model's vocabulary (default: the JSON's vocab_size, "
                             f"else {BENCH_VOCABULARY}, compare_pytorch_training.py's default)")
    parser.add_argument("--gpus", type=int, default=PAPER_GPUS, help="GPUs in the projection")
    parser.add_argument("--tokens_per_step", type=float, default=float(PAPER_TOKENS_PER_STEP),
                        help="source+target tokens per step of all GPUs together (the paper's "
                             f"{PAPER_TOKENS_PER_STEP})")
    parser.add_argument("--bucket_mb", type=float, default=DEFAULT_BUCKET_MIB,
                        help="the trainer's --bucket_mb (MiB; 0: one all-reduce after the pass)")
    parser.add_argument("--hidden_fraction", type=float,
                        help="measured fraction of the all-reduce hidden behind the backward "
                             "pass (1 - exposed / reduce from the trainer's log)")
    parser.add_argument("--bus_efficiency", type=float, default=1.0,
                        help="fraction of the published bus bandwidth NCCL reaches (nccl-tests "
                             "busbw / peak)")
    parser.add_argument("--sentence_tokens", type=float, default=30,
                        help="mean tokens per sentence, for the attention-score FLOPs")
    parser.add_argument("--vocabulary", type=int, default=PAPER_VOCABULARY,
                        help="shared vocabulary size of the projected models")
    parser.add_argument("--json_out", help="also write the JSON summary to this file")
    args = parser.parse_args(argv)
    if args.gpus < 2:
        parser.error(f"--gpus must be at least 2, not {args.gpus}")
    if not args.tokens_per_step > 0:
        parser.error(f"--tokens_per_step must be positive, not {args.tokens_per_step}")
    if args.bucket_mb < 0:
        parser.error(f"--bucket_mb must be 0 or more, not {args.bucket_mb}")
    if args.hidden_fraction is not None and not 0 <= args.hidden_fraction <= 1:
        parser.error(f"--hidden_fraction must be between 0 and 1, not {args.hidden_fraction}")
    if not 0 < args.bus_efficiency <= 1:
        parser.error(f"--bus_efficiency must be in (0, 1], not {args.bus_efficiency}")
    if not args.sentence_tokens > 0 or args.vocabulary <= 0:
        parser.error("--sentence_tokens and --vocabulary must be positive")
    measured = measurement(parser, args)
    projections = [project(measured, preset, system, gpus=args.gpus,
                           tokens_per_step=args.tokens_per_step, bucket_mib=args.bucket_mb,
                           bus_efficiency=args.bus_efficiency,
                           hidden_fraction=args.hidden_fraction, vocabulary=args.vocabulary,
                           sentence_tokens=args.sentence_tokens)
                   for preset in PAPER_RUNS for system in SYSTEMS]
    print(markdown(measured, args, projections))
    summary = {"measured": measured, "gpus": args.gpus, "tokens_per_step": args.tokens_per_step,
               "bucket_mb": args.bucket_mb,
               "bus_efficiency": args.bus_efficiency, "hidden_fraction": args.hidden_fraction,
               "paper": {p: {"seconds_per_step": r[0], "steps": r[1], "total": r[2]}
                         for p, r in PAPER_RUNS.items()},
               "projections": projections}
    line = json.dumps(summary)
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            f.write(line + "\n")
    print(line)


if __name__ == "__main__":
    main()
