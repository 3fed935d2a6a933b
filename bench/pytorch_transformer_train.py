#!/usr/bin/env python3
"""Training throughput of the paper's Transformer in PyTorch (CPU or GPU): the peer of xlate's
trainer.

    python3 bench/pytorch_transformer_train.py --spm MODEL --source FILE --target FILE
        [--preset base|tiny|big] [--max_tokens 2000] [--steps 10] [--warmup_steps 2]
        [--threads 2] [--seed 1] [--attention sdpa|manual] [--plan_out F | --plan_in F]
        [--layers N --d_model C --d_ff F --heads H --dropout P]
        [--device cpu|cuda] [--precision fp32|fp16|bf16] [--compile]

On a GPU: fp32 keeps TF32 off (xlate's float32 products never use it); fp16 and bf16 are
torch.autocast with fp32 master weights, fp16 with torch.amp.GradScaler (dynamic loss scaling);
--compile wraps the model in torch.compile. Every step ends with loss.item(), which waits for the
GPU, so the wall time is the GPU's; peak_memory_bytes is torch.cuda.max_memory_allocated(),
reserved_memory_bytes torch.cuda.max_memory_reserved().

Prints ONE JSON line on stdout (progress goes to stderr):
  {"system": "pytorch", "torch_version", "threads", "steps", "source_tokens", "target_tokens",
   "seconds", "tokens_per_second", "seconds_per_step", "final_loss", ...}
tokens_per_second = (non-pad source tokens + non-pad target tokens) / seconds over the timed
steps; warmup steps run first and are not timed. other_cpu_share is the CPU time that OTHER
processes of the machine used during the timed steps, as a share of all cores' time (from
/proc/stat); above 5% a warning goes to stderr: on a small shared machine a concurrent build
can slow an OpenMP-threaded run many times over (spinning threads wait for a descheduled one),
so compare runs only when it is small. PyTorch is not a dependency of xlate: install
it for this benchmark only (python3 -m pip install torch).

The model, written here from "Attention Is All You Need" (Vaswani et al. 2017) with plain
torch.nn.Linear / LayerNorm / parameters (not torch.nn.Transformer) so that it is exactly the
architecture of docs and DESIGN.md:
  - encoder and decoder stacks of N post-norm layers: x = LayerNorm(x + Dropout(Sublayer(x)))
    (LayerNorm eps 1e-5); no final stack norm;
  - multi-head attention, h heads, d_k = d_model / h, scores scaled by 1/sqrt(d_k); padding
    masked in encoder self-attention and cross-attention, causal decoder self-attention;
    q/k/v/out projections with biases; no dropout on the attention weights;
  - FFN max(0, x W1 + b1) W2 + b2, no dropout inside it;
  - one embedding matrix E [V, d_model] shared by source, target and the output projection;
    embeddings scaled by sqrt(d_model) plus sinusoidal positions (interleaved: channel 2i is
    sin(p / 10000^(2i/d_model)), channel 2i+1 the cos), dropout on the sum;
    logits = x E^T + b with a bias b [V];
  - dropout P_drop on every sub-layer output and on the embedding sums (training mode);
  - label-smoothed cross entropy, eps_ls = 0.1 spread uniformly over the whole vocabulary
    (loss = (1 - eps) * -log p(gold) + eps * mean_v -log p(v)), padding ignored, summed over
    target tokens then divided by their number;
  - Adam(beta1 0.9, beta2 0.98, eps 1e-9), lr = d_model^-0.5 * min(step^-0.5,
    step * lr_warmup^-1.5) with lr_warmup = 4000, step counted from 1; no gradient clipping.

Tokens: source = spm ids + eos(3); decoder input = bos(2) + ids; decoder output = ids + eos;
pad = 0. Batches ("the plan"): pairs with an empty side or more than --max_length tokens on a
side (eos/bos included) are dropped; the rest are sorted by (source length, target length,
line number); batches are cut greedily in that order while rows * (longest source + longest
target) <= --max_tokens (padded tokens of both sides; a pair over the budget by itself makes a
batch of one); the batch order is shuffled with
Python's random.Random(seed); step k takes batch k of that order, reshuffling (same generator)
after every full pass. --plan_out writes the batches the steps use (one line per step: the
0-based line numbers of its pairs, in row order); --plan_in reads such a file instead, so that
another system can be run on exactly the same batches.
"""

import argparse
import gzip
import json
import math
import os
import random
import resource
import sys
import time

try:
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError:
    sys.exit("bench/pytorch_transformer_train.py needs PyTorch, which xlate itself does not "
             "install: python3 -m pip install torch")

PAD_ID, BOS_ID, EOS_ID = 0, 2, 3

# The presets of xlate's ModelConfig::Preset (engine/model_config.cc), so that both systems
# train the same architecture; --layers/--d_model/--d_ff/--heads/--dropout override them.
PRESETS = {
    # name: (layers per stack, d_model, d_ff, heads, dropout)
    "tiny": (2, 64, 256, 4, 0.1),
    "base": (6, 512, 2048, 8, 0.1),
    "big": (6, 1024, 4096, 16, 0.3),
}


# --------------------------------------------------------------------------------------------
# Model. Shape letters: B batch rows, S source length, T target length, C d_model, H heads,
# D = C / H, F d_ff, V vocabulary.


def sinusoid_table(length, d_model):
    """[length, C]: PE[p, 2i] = sin(p / 10000^(2i/C)), PE[p, 2i+1] = cos(same angle)."""
    position = torch.arange(length, dtype=torch.float64).unsqueeze(1)          # [P, 1]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)                   # [C/2]
    angle = position / torch.pow(10000.0, two_i / d_model)                     # [P, C/2]
    table = torch.zeros(length, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table.float()


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, heads, use_sdpa):
        super().__init__()
        self.heads = heads
        self.d_k = d_model // heads
        self.use_sdpa = use_sdpa
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def _split(self, x):                                       # [B, L, C] -> [B, H, L, D]
        b, length, _ = x.shape
        return x.view(b, length, self.heads, self.d_k).transpose(1, 2)

    def forward(self, query, memory, allowed):
        """query [B, T, C], memory [B, S, C], allowed: bool, broadcastable to [B, H, T, S]."""
        q = self._split(self.q_proj(query))
        k = self._split(self.k_proj(memory))
        v = self._split(self.v_proj(memory))
        if self.use_sdpa:
            # The same softmax(q k^T / sqrt(d_k) + mask) v, fused by PyTorch.
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        else:
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d_k)   # [B, H, T, S]
            scores = scores.masked_fill(~allowed, float("-inf"))
            context = torch.matmul(torch.softmax(scores, dim=-1), v)           # [B, H, T, D]
        b, _, length, _ = context.shape
        context = context.transpose(1, 2).reshape(b, length, self.heads * self.d_k)
        return self.out_proj(context)


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class EncoderLayer(nn.Module):
    def __init__(self, d_model, d_ff, heads, dropout, use_sdpa):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, heads, use_sdpa)
        self.self_attn_layer_norm = nn.LayerNorm(d_model, eps=1e-5)
        self.ffn = FeedForward(d_model, d_ff)
        self.final_layer_norm = nn.LayerNorm(d_model, eps=1e-5)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, source_allowed):
        x = self.self_attn_layer_norm(x + self.dropout(self.self_attn(x, x, source_allowed)))
        return self.final_layer_norm(x + self.dropout(self.ffn(x)))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, d_ff, heads, dropout, use_sdpa):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, heads, use_sdpa)
        self.self_attn_layer_norm = nn.LayerNorm(d_model, eps=1e-5)
        self.encoder_attn = MultiHeadAttention(d_model, heads, use_sdpa)
        self.encoder_attn_layer_norm = nn.LayerNorm(d_model, eps=1e-5)
        self.ffn = FeedForward(d_model, d_ff)
        self.final_layer_norm = nn.LayerNorm(d_model, eps=1e-5)
        self.dropout = nn.Dropout(dropout)

    def forward(self, y, memory, causal_allowed, source_allowed):
        y = self.self_attn_layer_norm(y + self.dropout(self.self_attn(y, y, causal_allowed)))
        y = self.encoder_attn_layer_norm(
            y + self.dropout(self.encoder_attn(y, memory, source_allowed)))
        return self.final_layer_norm(y + self.dropout(self.ffn(y)))


class Transformer(nn.Module):
    def __init__(self, vocab_size, layers, d_model, d_ff, heads, dropout, use_sdpa):
        super().__init__()
        self.d_model = d_model
        self.shared = nn.Parameter(torch.empty(vocab_size, d_model))           # E [V, C]
        self.logits_bias = nn.Parameter(torch.zeros(vocab_size))               # b [V]
        self.encoder_layers = nn.ModuleList(
            EncoderLayer(d_model, d_ff, heads, dropout, use_sdpa) for _ in range(layers))
        self.decoder_layers = nn.ModuleList(
            DecoderLayer(d_model, d_ff, heads, dropout, use_sdpa) for _ in range(layers))
        self.dropout = nn.Dropout(dropout)
        # A buffer, so that .to(device) moves it with the parameters (not saved: it is fixed).
        self.register_buffer("positions", sinusoid_table(1024, d_model), persistent=False)  # [P, C]
        nn.init.normal_(self.shared, mean=0.0, std=d_model ** -0.5)
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                nn.init.zeros_(module.bias)

    def _embed(self, ids):                                     # [B, L] -> [B, L, C]
        length = ids.shape[1]
        if length > self.positions.shape[0]:
            self.positions = sinusoid_table(length, self.d_model).to(ids.device)
        x = F.embedding(ids, self.shared) * math.sqrt(self.d_model) + self.positions[:length]
        return self.dropout(x)

    def forward(self, source, decoder_input):
        """source [B, S], decoder_input [B, T] -> logits [B, T, V]."""
        source_allowed = (source != PAD_ID)[:, None, None, :]                   # [B, 1, 1, S]
        t = decoder_input.shape[1]
        causal_allowed = torch.ones(t, t, dtype=torch.bool,
                                    device=decoder_input.device).tril()[None, None]  # [1, 1, T, T]
        x = self._embed(source)
        for layer in self.encoder_layers:
            x = layer(x, source_allowed)
        y = self._embed(decoder_input)
        for layer in self.decoder_layers:
            y = layer(y, x, causal_allowed, source_allowed)
        return torch.matmul(y, self.shared.t()) + self.logits_bias


def label_smoothed_loss(logits, gold, epsilon):
    """Mean over non-pad target tokens of the label-smoothed cross entropy. logits [B, T, V]."""
    log_probs = torch.log_softmax(logits, dim=-1)                               # [B, T, V]
    nll = -log_probs.gather(-1, gold.unsqueeze(-1)).squeeze(-1)                 # [B, T]
    uniform = -log_probs.mean(dim=-1)                                           # [B, T]
    per_token = (1.0 - epsilon) * nll + epsilon * uniform
    mask = gold != PAD_ID
    return (per_token * mask).sum() / mask.sum()


def learning_rate(step, d_model, lr_warmup):
    return d_model ** -0.5 * min(step ** -0.5, step * lr_warmup ** -1.5)


# --------------------------------------------------------------------------------------------
# Data


def read_lines(path, limit):
    opener = gzip.open if path.endswith(".gz") else open
    lines = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if limit and len(lines) >= limit:
                break
            lines.append(line.rstrip("\n"))
    return lines


def load_pairs(args):
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=args.spm)
    ids = (sp.pad_id(), sp.bos_id(), sp.eos_id())
    if ids != (PAD_ID, BOS_ID, EOS_ID):
        sys.exit(f"{args.spm}: pad/bos/eos ids are {ids}, expected {(PAD_ID, BOS_ID, EOS_ID)}")
    sources = read_lines(args.source, args.max_sentences)
    targets = read_lines(args.target, args.max_sentences)
    if len(sources) != len(targets):
        sys.exit(f"{args.source} has {len(sources)} lines but {args.target} has {len(targets)}")
    source_ids = sp.encode(sources)
    target_ids = sp.encode(targets)
    return sp.get_piece_size(), source_ids, target_ids


def make_batches(source_ids, target_ids, max_tokens, max_length):
    """Lists of line numbers; see the module docstring for the rule."""
    kept = [i for i in range(len(source_ids))
            if source_ids[i] and target_ids[i]
            and len(source_ids[i]) + 1 <= max_length and len(target_ids[i]) + 1 <= max_length]
    kept.sort(key=lambda i: (len(source_ids[i]), len(target_ids[i]), i))
    batches, current, longest_source, longest_target = [], [], 0, 0
    for i in kept:
        s, t = len(source_ids[i]) + 1, len(target_ids[i]) + 1
        new_s, new_t = max(longest_source, s), max(longest_target, t)
        if current and (len(current) + 1) * (new_s + new_t) > max_tokens:
            batches.append(current)
            current, new_s, new_t = [], s, t
        current.append(i)
        longest_source, longest_target = new_s, new_t
    if current:
        batches.append(current)
    return batches


def plan_steps(batches, count, seed):
    rng = random.Random(seed)
    plan, order = [], []
    while len(plan) < count:
        if not order:
            order = list(range(len(batches)))
            rng.shuffle(order)
        plan.append(batches[order.pop(0)])
    return plan


def batch_tensors(lines, source_ids, target_ids):
    """source [B, S], decoder input [B, T], decoder output [B, T] (int64, padded with PAD_ID)."""
    rows = len(lines)
    s = max(len(source_ids[i]) for i in lines) + 1
    t = max(len(target_ids[i]) for i in lines) + 1
    source = torch.full((rows, s), PAD_ID, dtype=torch.long)
    decoder_input = torch.full((rows, t), PAD_ID, dtype=torch.long)
    decoder_output = torch.full((rows, t), PAD_ID, dtype=torch.long)
    for r, i in enumerate(lines):
        src, tgt = source_ids[i], target_ids[i]
        source[r, : len(src) + 1] = torch.tensor(src + [EOS_ID])
        decoder_input[r, : len(tgt) + 1] = torch.tensor([BOS_ID] + tgt)
        decoder_output[r, : len(tgt) + 1] = torch.tensor(tgt + [EOS_ID])
    return source, decoder_input, decoder_output


# --------------------------------------------------------------------------------------------


def parse_args():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spm", required=True, help="SentencePiece model (pad 0, bos 2, eos 3)")
    parser.add_argument("--source", required=True, help="source text, plain or .gz")
    parser.add_argument("--target", required=True, help="target text, plain or .gz")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="base")
    parser.add_argument("--layers", type=int, help="override: layers per stack")
    parser.add_argument("--d_model", type=int, help="override: model width")
    parser.add_argument("--d_ff", type=int, help="override: FFN inner width")
    parser.add_argument("--heads", type=int, help="override: attention heads")
    parser.add_argument("--dropout", type=float, help="override: dropout probability")
    parser.add_argument("--max_tokens", type=int, default=2000,
                        help="padded source + target tokens per batch (rows * longest, per side)")
    parser.add_argument("--steps", type=int, default=10, help="timed training steps")
    parser.add_argument("--warmup_steps", type=int, default=2, help="untimed steps run first")
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--attention", choices=["sdpa", "manual"], default="sdpa",
                        help="fused F.scaled_dot_product_attention, or matmul/softmax/matmul")
    parser.add_argument("--max_length", type=int, default=256,
                        help="drop pairs with more tokens than this on a side")
    parser.add_argument("--max_sentences", type=int, default=0,
                        help="read at most this many lines of each file (0: all)")
    parser.add_argument("--lr_warmup", type=int, default=4000,
                        help="warmup of the learning-rate schedule, in steps")
    parser.add_argument("--label_smoothing", type=float, default=0.1)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--precision", choices=["fp32", "fp16", "bf16"], default="fp32",
                        help="fp16/bf16: torch.autocast (fp16 on the GPU only, with a GradScaler)")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    parser.add_argument("--plan_out", help="write the batches of all steps here")
    parser.add_argument("--plan_in", help="read the batches of the steps from here")
    args = parser.parse_args()
    for name in ("max_tokens", "steps", "threads", "max_length", "lr_warmup"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.warmup_steps < 0:
        parser.error(f"--warmup_steps must be >= 0, got {args.warmup_steps}")
    for name in ("layers", "d_model", "d_ff", "heads"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.dropout is not None and not 0.0 <= args.dropout < 1.0:
        parser.error(f"--dropout must be in [0, 1), got {args.dropout}")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: PyTorch sees no CUDA device")
    # bf16 autocast runs on the CPU too (PyTorch's CPU mixed precision, oneDNN's bf16 products);
    # fp16 with its GradScaler is the GPU's.
    if args.precision == "fp16" and args.device != "cuda":
        parser.error("--precision fp16 needs --device cuda")
    return args


def architecture(args):
    """(layers, d_model, d_ff, heads, dropout): the preset with the command line's overrides."""
    chosen = list(PRESETS[args.preset])
    for k, name in enumerate(("layers", "d_model", "d_ff", "heads", "dropout")):
        if getattr(args, name) is not None:
            chosen[k] = getattr(args, name)
    layers, d_model, d_ff, heads, dropout = chosen
    if d_model % heads or d_model % 2:
        sys.exit(f"d_model {d_model} must be even and divisible by the {heads} heads")
    return layers, d_model, d_ff, heads, dropout


def busy_cpu_seconds():
    """CPU seconds all processes of the machine have used (/proc/stat), or None."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = f.readline().split()
    except OSError:
        return None
    # cpu user nice system idle iowait irq softirq steal ...: everything but idle and iowait.
    values = [int(v) for v in fields[1:9]]
    busy = sum(values) - values[3] - values[4]
    return busy / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    layers, d_model, d_ff, heads, dropout = architecture(args)

    vocab_size, source_ids, target_ids = load_pairs(args)
    total_steps = args.warmup_steps + args.steps
    if args.plan_in:
        with open(args.plan_in, encoding="utf-8") as f:
            plan = [[int(i) for i in line.split()] for line in f if line.strip()]
        if len(plan) < total_steps:
            sys.exit(f"{args.plan_in} has {len(plan)} batches, {total_steps} steps need more")
        plan = plan[:total_steps]
        for k, batch in enumerate(plan):
            if any(i < 0 or i >= len(source_ids) for i in batch):
                sys.exit(f"{args.plan_in}: batch {k} names a line outside the input")
    else:
        batches = make_batches(source_ids, target_ids, args.max_tokens, args.max_length)
        if not batches:
            sys.exit("no sentence pair fits the limits: check --max_length and the input files")
        plan = plan_steps(batches, total_steps, args.seed)
    if args.plan_out:
        with open(args.plan_out, "w", encoding="utf-8") as f:
            for batch in plan:
                f.write(" ".join(str(i) for i in batch) + "\n")
    device = torch.device(args.device)
    if args.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    tensors = [tuple(t.to(device) for t in batch_tensors(batch, source_ids, target_ids))
               for batch in plan]

    model = Transformer(vocab_size, layers, d_model, d_ff, heads, dropout,
                        use_sdpa=args.attention == "sdpa").to(device)
    model.train()
    parameters = sum(p.numel() for p in model.parameters())
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)
    # Every batch has other rows and lengths: compiled for dynamic shapes from the start, as the
    # second batch would make it recompile anyway (the first, static compile thrown away).
    forward = torch.compile(model, dynamic=True) if args.compile else model
    autocast_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.precision)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 7) if args.precision == "fp16" else None
    print(f"pytorch {torch.__version__}: {args.preset} (N={layers}, d_model={d_model}, "
          f"d_ff={d_ff}, h={heads}, dropout={dropout}; {parameters} parameters, vocabulary "
          f"{vocab_size}), {args.threads} threads, {args.warmup_steps} warmup + {args.steps} "
          f"timed steps", file=sys.stderr)

    source_tokens = target_tokens = padded_tokens = 0
    loss_value = float("nan")
    started = None
    warmup_started = time.perf_counter()  # the warmup steps: torch.compile's compilation too
    for step, (source, decoder_input, decoder_output) in enumerate(tensors, start=1):
        if step == args.warmup_steps + 1:
            started = time.perf_counter()
            warmup_seconds = started - warmup_started
            machine_cpu_before, own_cpu_before = busy_cpu_seconds(), own_cpu_seconds()
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, d_model, args.lr_warmup)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(args.device, dtype=autocast_dtype, enabled=autocast_dtype is not None):
            logits = forward(source, decoder_input)
            loss = label_smoothed_loss(logits.float(), decoder_output, args.label_smoothing)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        loss_value = loss.item()
        if step > args.warmup_steps:
            source_tokens += int((source != PAD_ID).sum())
            target_tokens += int((decoder_output != PAD_ID).sum())
            padded_tokens += source.numel() + decoder_output.numel()
        print(f"step {step}: {source.shape[0]} rows, source {source.shape[1]}, target "
              f"{decoder_output.shape[1]}, loss {loss_value:.4f}", file=sys.stderr)
    seconds = time.perf_counter() - started
    other_cpu_share = None
    machine_cpu_after = busy_cpu_seconds()
    if machine_cpu_before is not None and machine_cpu_after is not None:
        other = (machine_cpu_after - machine_cpu_before) - (own_cpu_seconds() - own_cpu_before)
        other_cpu_share = max(0.0, other) / (seconds * os.cpu_count())
        if other_cpu_share > 0.05:
            print(f"warning: other processes used {100 * other_cpu_share:.0f}% of the machine's "
                  f"CPU time during the timed steps: this measurement is slowed by them",
                  file=sys.stderr)

    print(json.dumps({
        "system": "pytorch",
        "torch_version": torch.__version__,
        "device": args.device,
        "gpu": torch.cuda.get_device_name() if args.device == "cuda" else None,
        "precision": args.precision,
        "compiled": args.compile,
        "warmup_seconds": warmup_seconds,
        "peak_memory_bytes": torch.cuda.max_memory_allocated() if args.device == "cuda" else None,
        "reserved_memory_bytes": (torch.cuda.max_memory_reserved() if args.device == "cuda"
                                  else None),
        "threads": args.threads,
        "preset": args.preset,
        "layers": layers,
        "d_model": d_model,
        "d_ff": d_ff,
        "heads": heads,
        "dropout": dropout,
        "vocab_size": vocab_size,
        "attention": args.attention,
        "parameters": parameters,
        "max_tokens": args.max_tokens,
        "warmup_steps": args.warmup_steps,
        "steps": args.steps,
        "source_tokens": source_tokens,
        "target_tokens": target_tokens,
        "padded_tokens": padded_tokens,
        "seconds": seconds,
        "tokens_per_second": (source_tokens + target_tokens) / seconds,
        "seconds_per_step": seconds / args.steps,
        "final_loss": loss_value,
        "other_cpu_share": other_cpu_share,
    }))


if __name__ == "__main__":
    main()
