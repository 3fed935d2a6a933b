#!/usr/bin/env python3
"""Throughput benchmark: xlate against CTranslate2 (and optionally Hugging Face MarianMT) on the
very same weights, on the CPU or (--device cuda) on a GPU.

    python3 bench/compare_ctranslate2.py --model_dir D [--sentences 500] [--batch_size 32]
        [--beam_size 4] [--threads 2] [--xlate_bench build/bench/xlate_translate_bench]
        [--work_dir W] [--json_out results.json]

Steps:
  1. Tokenize the source and reference files with the model's spm.model (or, for a Hugging
     Face Marian directory, its source.spm / target.spm and vocab.json; CTranslate2 then gets
     the model from its own ct2-transformers-converter).
  2. Sort the first N sentences by source token count and cut them into batches of batch_size.
  3. A model with random (or weak) weights decodes to arbitrary lengths, so every batch is
     decoded for a FIXED number of steps: L_b = max over the batch of the reference token count
     (each capped at that sentence's source token count + 50, and at max_position_embeddings).
     Every hypothesis then has exactly L_b target tokens and no EOS, and both systems do the
     same amount of work.
  4. Write the plan file (TSV, one line per sentence: batch_index, L_b, source text), which
     xlate's bench binary reads:  xlate_translate_bench --model_dir D --plan PLAN
     --beam_size B --threads T; it prints one JSON line (sentences, target_tokens, seconds,
     tokens_per_second, sentences_per_second, peak_rss_mb, matmul_share).
  5. Convert the model with bench/convert_to_ctranslate2.py and run CTranslate2 (float32, CPU,
     intra_threads=T, inter_threads=1, or --ct2_inter_threads) on the same batches in a
     subprocess of its own, timing only the translate_batch calls.
  6. Run xlate's binary in another subprocess, if it exists.
  7. Print a table (sentences/s, target tokens/s, peak RSS) and the xlate/CT2 tokens/s ratio;
     optionally write everything as JSON.

--mode natural measures the way a user meets the systems: a trained model (e.g. the shipped
models/en-de-multi30k) on a real test set (e.g. Multi30k test_2016_flickr, gzipped files are
read as such), the same sorted batches, and each system stopping by its own rule at its end
token. Both then do different amounts of work, so the ratio is of sentences/s, and each
system's BLEU against the reference (`xlate bleu`, sacreBLEU-compatible) is printed beside it to
show that the work is equivalent. The stopping rules differ in two documented ways:
  * length penalty: xlate ranks finished hypotheses by log P / ((5+|Y|)/6)^alpha (GNMT, the
    paper's), CTranslate2 by log P / |Y|^alpha; both get --length_penalty.
  * length limit: xlate stops a sentence at source tokens + --max_extra (50), CTranslate2 at
    max_decoding_length, set per batch to the largest source + max_extra in it.
In natural mode xlate's plan lines have decode_length 0 (the bench binary's natural stopping),
and `xlate translate` is also timed as a whole process on the same file (load, tokenisation,
batching and all), the way a user runs it.

Both systems can translate several batches at once, each on fewer threads: CTranslate2's
inter_threads (--ct2_inter_threads N: intra_threads T each), xlate's --workers N (natural mode;
T / N threads each). On a few cores that is each system's fastest setting for short sentences,
so compare the best setting of each (run the script once per setting).

Each system runs alone in its own child process; its peak RSS is the child's ru_maxrss as
returned by wait4(), so the two systems' memory is measured separately and the same way.
The driver also measures how much CPU time OTHER processes took while a system ran and warns
above 5%: on a small machine a concurrent job (a build, tests) can slow a run many times over,
CTranslate2's spin-waiting OpenMP threads in particular. Use --repeats to keep the fastest run:
the two systems then take turns (CTranslate2, xlate, CTranslate2, ...), and the ratio of each
pair of runs is printed too, so that a drift in the machine's speed shows as their spread
rather than as a difference between the systems.
"""

import argparse
import gzip
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
DEFAULT_SOURCE = os.path.join(REPO_ROOT, "..", "shared", "data", "wmt14", "newstest2014.en")
DEFAULT_REFERENCE = os.path.join(REPO_ROOT, "..", "shared", "data", "wmt14", "newstest2014.de")
DEFAULT_XLATE_BENCH = os.path.join(REPO_ROOT, "build", "bench", "xlate_translate_bench")
DEFAULT_XLATE = os.path.join(REPO_ROOT, "build", "cli", "xlate")
CONVERTER = os.path.join(HERE, "convert_to_ctranslate2.py")
WORKER_FLAG = "--ct2_worker"


# --------------------------------------------------------------------------------------------
# CTranslate2 worker (runs in its own process: python3 compare_ctranslate2.py --ct2_worker JOB OUT)


def ct2_options(job, batch):
    """translate_batch's length options for a planned batch: exactly L_b tokens (fixed plans)
    or the natural stop at the end token within max_decoding_length (natural plans, length 0)."""
    if batch["length"] > 0:
        return {"min_decoding_length": batch["length"], "max_decoding_length": batch["length"]}
    return {"max_decoding_length": batch["max_decoding_length"]}


def ct2_worker(job_path, out_path):
    import resource

    with open(job_path, encoding="utf-8") as f:
        job = json.load(f)
    import ctranslate2  # noqa: imported after reading the job so the baseline below includes it

    rss_before_model_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    inter_threads = job.get("inter_threads", 1)
    translator = ctranslate2.Translator(
        job["ct2_dir"], device=job.get("device", "cpu"),
        compute_type=job.get("compute_type", "float32"),
        intra_threads=job["threads"], inter_threads=inter_threads)
    load_seconds = time.perf_counter() - t0
    eos = job["eos_token"]

    # What we found about CTranslate2's length options (checked with ctranslate2 4.8.5, greedy
    # and beam search, on a model whose final_logits_bias made EOS by far the likeliest token):
    #  * max_decoding_length counts an EOS as one of the generated tokens when EOS is produced
    #    (min 1 / max 5 gave ['x', '</s>']), but when the limit is reached the hypothesis is
    #    simply cut: no extra decoder step is spent on a forced EOS (max 1 gave ['x']).
    #  * min_decoding_length=L masks EOS for the first L steps.
    #  So min_decoding_length = max_decoding_length = L_b yields exactly L_b non-EOS tokens from
    #  exactly L_b decoder steps (a greedy step callback fires L_b times), the same work as
    #  xlate's fixed L_b steps. No +1 adjustment is needed; each hypothesis is checked below.
    if job.get("append_source_eos"):  # a Marian model converted by CTranslate2's own converter
        for batch in job["batches"]:
            batch["source"] = [pieces + [eos] for pieces in batch["source"]]
    warmup = job.get("warmup_batches", 0)
    for batch in job["batches"][:warmup]:
        translator.translate_batch(
            batch["source"], beam_size=job["beam_size"], length_penalty=job["length_penalty"],
            max_input_length=0, return_scores=False, **ct2_options(job, batch))

    seconds = 0.0
    sentences = 0
    target_tokens = 0
    bad = []
    batch_seconds = []
    best_pieces = []  # each sentence's best hypothesis, in plan order
    if inter_threads > 1:
        # Every planned batch submitted at once (asynchronous), each with its own length
        # options: CTranslate2's inter_threads workers take them as they come free.
        t0 = time.perf_counter()
        pending = [translator.translate_batch(
            batch["source"], beam_size=job["beam_size"], length_penalty=job["length_penalty"],
            max_input_length=0, return_scores=False, asynchronous=True, **ct2_options(job, batch))
            for batch in job["batches"]]
        batch_results = [[async_result.result() for async_result in batch] for batch in pending]
        seconds = time.perf_counter() - t0
    else:
        batch_results = []
        for batch in job["batches"]:
            t0 = time.perf_counter()
            batch_results.append(translator.translate_batch(
                batch["source"], beam_size=job["beam_size"], length_penalty=job["length_penalty"],
                max_input_length=0, return_scores=False, **ct2_options(job, batch)))
            batch_seconds.append(time.perf_counter() - t0)
            seconds += batch_seconds[-1]
    for bi, (batch, results) in enumerate(zip(job["batches"], batch_results)):
        L = batch["length"]
        for si, res in enumerate(results):
            hyp = res.hypotheses[0]
            best_pieces.append(hyp)
            if L > 0 and (len(hyp) != L or eos in hyp):
                bad.append({"batch": bi, "sentence": si, "expected": L, "got": len(hyp),
                            "has_eos": eos in hyp})
            sentences += 1
            target_tokens += len(hyp)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = {
        "system": "ctranslate2",
        "version": ctranslate2.__version__,
        "inter_threads": inter_threads,
        "sentences": sentences,
        "target_tokens": target_tokens,
        "seconds": seconds,
        "tokens_per_second": target_tokens / seconds if seconds > 0 else 0.0,
        "sentences_per_second": sentences / seconds if seconds > 0 else 0.0,
        "load_seconds": load_seconds,
        "warmup_batches": warmup,
        "batch_seconds": batch_seconds,
        "self_peak_rss_mb": peak_kb / 1024.0,
        "rss_before_model_mb": rss_before_model_kb / 1024.0,
        "length_mismatches": bad[:20],
        "length_mismatch_count": len(bad),
        "best_pieces": best_pieces,
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(out, f)
    return 0 if not bad else 3


# --------------------------------------------------------------------------------------------
# driver


def cpu_ticks():
    """(busy, steal) seconds of all CPUs from /proc/stat, or None where there is none."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        hz = os.sysconf("SC_CLK_TCK")
        v = [int(x) for x in fields[1:9]]  # user nice system idle iowait irq softirq steal
        return (v[0] + v[1] + v[2] + v[5] + v[6]) / hz, v[7] / hz
    except (OSError, ValueError, IndexError):
        return None


class GpuMemorySampler:
    """Device memory a child process holds on GPU 0, measured the same way for every system:
    NVML's used memory, polled every 10 ms while the child runs, peak minus the level before it
    started (each system runs alone, so the difference is its process: CUDA context, weights,
    caches, allocator pools). Inactive (None) without pynvml or a GPU."""

    def __init__(self):
        self.peak = self.baseline = None
        try:
            import pynvml
            pynvml.nvmlInit()
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            self._used = lambda: pynvml.nvmlDeviceGetMemoryInfo(self._handle).used
        except Exception:  # no pynvml, no driver, no GPU: no figure
            self._used = None

    def __enter__(self):
        if self._used is None:
            return self
        import threading
        self.baseline = self.peak = self._used()
        self._stop = threading.Event()

        def poll():
            while not self._stop.wait(0.01):
                self.peak = max(self.peak, self._used())
        self._thread = threading.Thread(target=poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        if self._used is not None:
            self._stop.set()
            self._thread.join()

    def megabytes(self):
        return None if self.peak is None else (self.peak - self.baseline) / 2**20


def run_measured(cmd, stdout_path, env=None):
    """Runs cmd in a child process; returns (exit status, facts about the run).

    facts: elapsed seconds, the child's peak RSS in MB (wait4's ru_maxrss, KiB on Linux), the
    child's CPU seconds, and the share of the machine's CPU time that OTHER processes used while
    it ran (plus hypervisor steal): a timing taken while that share is large is not reliable,
    above all with OpenMP threads that spin-wait for a core another process holds."""
    before = cpu_ticks()
    with open(stdout_path, "wb") as out, GpuMemorySampler() as gpu:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, env=env)
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            proc.kill()
            raise
        elapsed = time.perf_counter() - t0
    after = cpu_ticks()
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4, tell Popen
    child_cpu = usage.ru_utime + usage.ru_stime
    facts = {"process_seconds": elapsed, "peak_rss_mb": usage.ru_maxrss / 1024.0,
             "process_cpu_seconds": child_cpu, "gpu_process_mb": gpu.megabytes()}
    if before and after and elapsed > 0:
        capacity = elapsed * (os.cpu_count() or 1)
        facts["other_cpu_share"] = max(0.0, (after[0] - before[0]) - child_cpu) / capacity
        facts["steal_share"] = (after[1] - before[1]) / capacity
    return proc.returncode, facts


def warn_if_busy(name, facts):
    other = facts.get("other_cpu_share", 0.0) + facts.get("steal_share", 0.0)
    if other > 0.05:
        print("warning: while %s ran, other processes/steal used %.0f%% of the CPUs: its timing is "
              "not reliable (run on an idle machine, or use --repeats)" % (name, 100 * other),
              file=sys.stderr)


def read_lines(path, n):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        lines = [line.rstrip("\r\n") for line in f]
    return lines if n <= 0 else lines[:n]


class MarianPieces:
    """A Hugging Face Marian directory's tokenizer, as the plan needs it (the subset of
    SentencePieceProcessor that make_plan calls): sources cut by source.spm, references counted
    by target.spm, pieces mapped through vocab.json as MarianTokenizer does (a piece it lacks is
    <unk>). CTranslate2's own converter (ct2-transformers-converter) converts such a directory,
    and its Marian models take the source's </s> as a piece of the input."""

    def __init__(self, model_dir):
        import sentencepiece
        self.source = sentencepiece.SentencePieceProcessor(
            model_file=os.path.join(model_dir, "source.spm"))
        self.target = sentencepiece.SentencePieceProcessor(
            model_file=os.path.join(model_dir, "target.spm"))
        with open(os.path.join(model_dir, "vocab.json"), encoding="utf-8") as f:
            self.vocabulary = json.load(f)
        self.pieces = {i: piece for piece, i in self.vocabulary.items()}

    def encode(self, texts, out_type=int):
        if out_type is str:
            return self.source.encode(texts, out_type=str)
        return self.target.encode(texts)

    def piece_to_id(self, pieces):
        unk = self.vocabulary["<unk>"]
        return [self.vocabulary.get(piece, unk) for piece in pieces]

    def id_to_piece(self, i):
        return self.pieces[i]


def make_plan(sp, sources, references, batch_size, max_extra, max_positions, natural=False):
    """Returns a list of batches {indices, length, source (pieces), text}; natural plans have
    length 0 (stop at the end token) and CTranslate2's max_decoding_length."""
    src_pieces = sp.encode(sources, out_type=str)
    ref_counts = [len(ids) for ids in sp.encode(references)]
    order = sorted(range(len(sources)), key=lambda i: (len(src_pieces[i]), i))
    batches = []
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        length = max(min(ref_counts[i], len(src_pieces[i]) + max_extra) for i in idx)
        length = max(1, min(length, max_positions))
        batches.append({
            "indices": idx,
            "length": 0 if natural else length,
            "max_decoding_length": min(max_positions,
                                       max(len(src_pieces[i]) for i in idx) + max_extra),
            "source": [src_pieces[i] for i in idx],
            "ids": [sp.piece_to_id(src_pieces[i]) for i in idx],
            "text": [sources[i] for i in idx],
        })
    return batches


def write_plan(path, batches):
    with open(path, "w", encoding="utf-8") as f:
        for bi, batch in enumerate(batches):
            for text in batch["text"]:
                clean = text.replace("\t", " ").replace("\n", " ").replace("\r", " ")
                f.write("%d\t%d\t%s\n" % (bi, batch["length"], clean))


def last_json_line(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


def best_of(runs):
    """The fastest run (most tokens/s), with the peak RSS of all runs and every run's speed."""
    best = dict(max(runs, key=lambda r: r.get("tokens_per_second") or 0.0))
    best["peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs)
    best["runs"] = len(runs)
    best["tokens_per_second_all_runs"] = [r.get("tokens_per_second") for r in runs]
    return best


def fmt(v, spec="%.1f"):
    return "n/a" if v is None else spec % v


def main():
    if len(sys.argv) > 1 and sys.argv[1] == WORKER_FLAG:
        if len(sys.argv) != 4:
            print("usage: %s %s JOB OUT" % (sys.argv[0], WORKER_FLAG), file=sys.stderr)
            return 2
        return ct2_worker(sys.argv[2], sys.argv[3])

    ap = argparse.ArgumentParser(description="Benchmark xlate against CTranslate2 on the CPU.")
    ap.add_argument("--model_dir", required=True, help="xlate model directory")
    ap.add_argument("--source", default=DEFAULT_SOURCE)
    ap.add_argument("--reference", default=DEFAULT_REFERENCE)
    ap.add_argument("--sentences", type=int, default=500, help="first N sentences (0 = all)")
    ap.add_argument("--batch_size", type=int, default=32)
    ap.add_argument("--beam_size", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ct2_threads", type=int, default=0,
                    help="CTranslate2's intra_threads when not --threads (on the 2-core "
                         "development machine CTranslate2 4.8.5 ran faster with 1 than with 2)")
    ap.add_argument("--ct2_inter_threads", type=int, default=1,
                    help="CTranslate2's inter_threads: batches translated at once, each on "
                         "--ct2_threads (or --threads) threads; with more than 1, every planned "
                         "batch is submitted at once (asynchronous). On a few cores its best "
                         "throughput: on the 2-core AMD EPYC machine, inter 2 x intra 1 ran "
                         "1.4x faster than intra 2")
    ap.add_argument("--workers", type=int, default=1,
                    help="xlate's --workers (natural mode): batches translated at once, each on "
                         "--threads / workers threads; passed to the bench and `xlate translate`")
    ap.add_argument("--length_penalty", type=float, default=0.6)
    ap.add_argument("--max_extra", type=int, default=50,
                    help="cap each sentence's target length at source tokens + this")
    ap.add_argument("--xlate_bench", default=DEFAULT_XLATE_BENCH)
    ap.add_argument("--xlate", default=DEFAULT_XLATE,
                    help="the xlate tool: BLEU (natural mode) and the `xlate translate` process")
    ap.add_argument("--mode", default="fixed", choices=["fixed", "natural"],
                    help="fixed: every batch decodes exactly L_b tokens (any weights); natural: "
                         "each system stops at its end token (a trained model), BLEU printed")
    ap.add_argument("--work_dir", default=None,
                    help="where the plan, the CTranslate2 model and logs go (default: a temporary "
                         "directory removed at the end)")
    ap.add_argument("--ct2_dir", default=None,
                    help="reuse this converted CTranslate2 model instead of converting")
    ap.add_argument("--no_source_eos", dest="add_source_eos", action="store_false",
                    help="do not append EOS to CTranslate2's source (xlate always appends it, "
                         "see docs/model-format.md)")
    ap.add_argument("--ct2_warmup_batches", type=int, default=1,
                    help="untimed CTranslate2 batches run before the timed pass")
    ap.add_argument("--repeats", type=int, default=1,
                    help="run each system this many times (each in a fresh process) and keep the "
                         "fastest run; peak RSS is the largest seen")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="where every system runs (cuda: a GPU machine)")
    ap.add_argument("--compute_type", default=None,
                    help="xlate's --compute_type and the peers' precision (default: float32 on "
                         "the CPU, float16 on CUDA)")
    ap.add_argument("--marian", action="store_true",
                    help="also run Hugging Face MarianMT generate on the same weights "
                         "(bench/marian_generate_worker.py; needs torch and transformers)")
    ap.add_argument("--skip_ct2", action="store_true")
    ap.add_argument("--skip_xlate", action="store_true")
    ap.add_argument("--json_out", default=None)
    args = ap.parse_args()
    if args.workers > 1 and args.mode != "natural":
        ap.error("--workers > 1 needs --mode natural (a fixed plan's batches each have their own "
                 "length and are translated one by one)")
    if args.workers < 1 or args.ct2_inter_threads < 1:
        ap.error("--workers and --ct2_inter_threads must be >= 1")
    if args.compute_type is None:
        args.compute_type = "float16" if args.device == "cuda" else "float32"

    import sentencepiece

    model_dir = os.path.abspath(args.model_dir)
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    if os.path.exists(os.path.join(model_dir, "spm.model")):
        sp = sentencepiece.SentencePieceProcessor(model_file=os.path.join(model_dir, "spm.model"))
    else:
        sp = MarianPieces(model_dir)  # a Hugging Face Marian directory (OPUS-MT)

    temp_work = args.work_dir is None
    work_dir = tempfile.mkdtemp(prefix="xlate_ct2_") if temp_work else os.path.abspath(args.work_dir)
    os.makedirs(work_dir, exist_ok=True)
    try:
        return run(args, cfg, sp, model_dir, work_dir)
    finally:
        if temp_work:
            shutil.rmtree(work_dir, ignore_errors=True)


def run_marian(args, cfg, model_dir, batches, work_dir):
    """MarianMT generate on the same batches and lengths, in its own process (see the worker)."""
    eos = int(cfg["eos_token_id"])
    job = {
        "model_dir": os.path.abspath(model_dir), "device": args.device,
        "compute_type": args.compute_type, "beam_size": args.beam_size,
        "length_penalty": args.length_penalty,
        "batches": [{"length": b["length"],
                     "ids": [ids + ([eos] if args.add_source_eos else []) for ids in b["ids"]]}
                    for b in batches],
    }
    job_path = os.path.join(work_dir, "marian_job.json")
    out_path = os.path.join(work_dir, "marian_result.json")
    with open(job_path, "w", encoding="utf-8") as f:
        json.dump(job, f)
    print("running MarianMT generate (%s, %s) ..." % (args.device, args.compute_type),
          file=sys.stderr)
    status, facts = run_measured(
        [sys.executable, os.path.join(HERE, "marian_generate_worker.py"), job_path, out_path],
        os.path.join(work_dir, "marian_stdout.txt"))
    if status != 0 or not os.path.exists(out_path):
        print("error: MarianMT worker failed (exit status %d)" % status, file=sys.stderr)
        return None
    with open(out_path, encoding="utf-8") as f:
        result = json.load(f)
    result.update(facts)
    return result


def run(args, cfg, sp, model_dir, work_dir):
    sources = read_lines(args.source, args.sentences)
    references = read_lines(args.reference, args.sentences)
    if len(sources) != len(references):
        print("error: %d source lines but %d reference lines" % (len(sources), len(references)),
              file=sys.stderr)
        return 1
    natural = args.mode == "natural"
    batches = make_plan(sp, sources, references, args.batch_size, args.max_extra,
                        int(cfg.get("max_position_embeddings", 1024)), natural)
    plan_references = [references[i] for b in batches for i in b["indices"]]
    n_sent = len(sources)
    expected_tokens = sum(b["length"] * len(b["indices"]) for b in batches)
    src_tokens = sum(len(p) for b in batches for p in b["source"])
    plan_path = os.path.join(work_dir, "plan.tsv")
    write_plan(plan_path, batches)
    print("plan: %d sentences, %d batches of <= %d, %d source tokens, %s target tokens -> %s"
          % (n_sent, len(batches), args.batch_size, src_tokens,
             "natural" if natural else expected_tokens, plan_path), file=sys.stderr)

    eos_token = sp.id_to_piece(int(cfg["eos_token_id"]))
    results = {
        "model_dir": model_dir,
        "source": os.path.abspath(args.source),
        "sentences": n_sent,
        "batches": len(batches),
        "batch_size": args.batch_size,
        "mode": args.mode,
        "beam_size": args.beam_size,
        "threads": args.threads,
        "length_penalty": args.length_penalty,
        "source_tokens": src_tokens,
        "target_tokens": None if natural else expected_tokens,
        "machine": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "plan": plan_path,
        "ctranslate2": None,
        "xlate": None,
    }

    # ---- the runs: CTranslate2 and xlate take turns, so that a change in the machine's speed
    # during the benchmark (other tenants, clocks) falls on both systems' runs alike.
    run_ct2 = None
    if not args.skip_ct2:
        ct2_dir = args.ct2_dir
        if ct2_dir is None:
            ct2_dir = os.path.join(work_dir, "ct2_model")
            cmd = [sys.executable, CONVERTER, "--model_dir", model_dir, "--out", ct2_dir, "--force"]
            if args.add_source_eos:
                cmd.append("--add_source_eos")
            if isinstance(sp, MarianPieces):  # CTranslate2's own converter of transformers' models
                cmd = ["ct2-transformers-converter", "--model", model_dir, "--output_dir", ct2_dir,
                       "--force"]
            subprocess.run(cmd, check=True)
        job = {
            "ct2_dir": os.path.abspath(ct2_dir),
            "device": args.device,
            "compute_type": args.compute_type,
            "threads": args.ct2_threads or args.threads,
            "inter_threads": args.ct2_inter_threads,
            "beam_size": args.beam_size,
            "length_penalty": args.length_penalty,
            "eos_token": eos_token,
            "append_source_eos": isinstance(sp, MarianPieces),
            "warmup_batches": args.ct2_warmup_batches,
            "batches": [{"length": b["length"], "max_decoding_length": b["max_decoding_length"],
                         "source": b["source"]} for b in batches],
        }
        job_path = os.path.join(work_dir, "ct2_job.json")
        out_path = os.path.join(work_dir, "ct2_result.json")
        with open(job_path, "w", encoding="utf-8") as f:
            json.dump(job, f)

        def run_ct2(rep):
            """One CTranslate2 run; None when its worker failed."""
            print("running CTranslate2 (%d x %d threads, beam %d), run %d/%d ..."
                  % (job["inter_threads"], job["threads"], args.beam_size, rep + 1, repeats),
                  file=sys.stderr)
            if os.path.exists(out_path):
                os.remove(out_path)
            status, facts = run_measured(
                [sys.executable, os.path.abspath(__file__), WORKER_FLAG, job_path, out_path],
                os.path.join(work_dir, "ct2_stdout.txt"))
            if not os.path.exists(out_path):
                print("error: CTranslate2 worker failed (exit status %d)" % status, file=sys.stderr)
                return None
            with open(out_path, encoding="utf-8") as f:
                run_result = json.load(f)
            run_result.update(facts)
            warn_if_busy("CTranslate2", facts)
            return run_result

    xlate_bench = os.path.abspath(args.xlate_bench)
    xlate_note = None
    run_xlate = None
    if args.skip_xlate:
        xlate_note = "skipped (--skip_xlate)"
    elif not (os.path.isfile(xlate_bench) and os.access(xlate_bench, os.X_OK)):
        xlate_note = "xlate bench binary not found at %s (build it first); CTranslate2 only" % xlate_bench
    else:
        xlate_output = os.path.join(work_dir, "xlate_translations.txt")
        cmd = [xlate_bench, "--model_dir", model_dir, "--plan", plan_path,
               "--beam_size", str(args.beam_size), "--threads", str(args.threads),
               "--device", args.device, "--compute_type", args.compute_type,
               "--workers", str(args.workers), "--output", xlate_output]
        stdout_path = os.path.join(work_dir, "xlate_stdout.txt")

        def run_xlate(rep):
            """One xlate run; None (and xlate_note set) when the bench failed."""
            nonlocal xlate_note
            print("running xlate, run %d/%d: %s" % (rep + 1, repeats, " ".join(cmd)),
                  file=sys.stderr)
            status, facts = run_measured(cmd, stdout_path)
            with open(stdout_path, encoding="utf-8", errors="replace") as f:
                xlate_stdout = f.read()
            xl = last_json_line(xlate_stdout)
            if status != 0 or xl is None:
                sys.stderr.write(xlate_stdout[-2000:])
                xlate_note = "xlate bench failed (exit status %d, %s; stdout in %s)" % (
                    status, "no JSON line on stdout" if xl is None else "JSON printed",
                    stdout_path)
                print("error: " + xlate_note, file=sys.stderr)
                return None
            xl["system"] = "xlate"
            xl["self_peak_rss_mb"] = xl.get("peak_rss_mb")
            xl.update(facts)
            warn_if_busy("xlate", facts)
            return xl

    repeats = max(1, args.repeats)
    ct2_runs, xlate_runs = [], []
    for rep in range(repeats):
        if run_ct2 is not None:
            ct2_run = run_ct2(rep)
            if ct2_run is None:
                return 1
            ct2_runs.append(ct2_run)
        if run_xlate is not None and (rep == 0 or xlate_runs):
            xl = run_xlate(rep)
            if xl is None:
                xlate_runs = []
            else:
                xlate_runs.append(xl)

    # ---- CTranslate2's best run
    if ct2_runs:
        ct2 = best_of(ct2_runs)
        ct2["bleu"] = bleu(args.xlate, [sp.decode_pieces(p) for p in ct2.pop("best_pieces")],
                           plan_references, work_dir, "ct2") if natural else None
        for r in ct2_runs:
            r.pop("best_pieces", None)
        results["ctranslate2"] = ct2
        if ct2["length_mismatch_count"]:
            print("error: %d CTranslate2 hypotheses do not have L_b tokens, e.g. %s"
                  % (ct2["length_mismatch_count"], ct2["length_mismatches"][:3]), file=sys.stderr)
            return 1
        if not natural and ct2["target_tokens"] != expected_tokens:
            print("error: CTranslate2 produced %d target tokens, the plan asks for %d"
                  % (ct2["target_tokens"], expected_tokens), file=sys.stderr)
            return 1

    # ---- xlate's best run
    if xlate_runs:
        xl = best_of(xlate_runs)
        if natural:
            xl["bleu"] = bleu(args.xlate, read_lines(xlate_output, 0), plan_references,
                              work_dir, "xlate")
        elif xl.get("target_tokens") != expected_tokens:
            print("warning: xlate reports %s target tokens, the plan asks for %d"
                  % (xl.get("target_tokens"), expected_tokens), file=sys.stderr)
        results["xlate"] = xl
    results["xlate_note"] = xlate_note
    results["xlate_translate_process"] = None
    if natural and not args.skip_xlate and os.access(args.xlate, os.X_OK):
        results["xlate_translate_process"] = time_xlate_translate(args, model_dir, sources,
                                                                  references, work_dir)

    # ---- Hugging Face MarianMT
    results["marian_hf"] = None
    if args.marian:
        results["marian_hf"] = run_marian(args, cfg, model_dir, batches, work_dir)

    # ---- report
    rows = [r for r in (results["xlate"], results["ctranslate2"], results["marian_hf"]) if r]
    print()
    print("%d sentences of %s sorted by source length, %d batches of %d, beam %d, %d threads, %s"
          % (n_sent, os.path.basename(args.source), len(batches), args.batch_size,
             args.beam_size, args.threads,
             "natural stopping" if natural else "%d target tokens" % expected_tokens))
    # GPU mem MB: the system's own account (xlate: its caching allocator's reserve; MarianMT:
    # torch's peak allocation). GPU proc MB: NVML, the same way for all (GpuMemorySampler).
    print("%-12s %12s %15s %12s %11s %12s %10s %6s" % (
        "system", "sentences/s", "target tok/s", "peak RSS MB", "GPU mem MB", "GPU proc MB",
        "seconds", "BLEU"))
    for r in rows:
        print("%-12s %12s %15s %12s %11s %12s %10s %6s" % (
            r["system"], fmt(r.get("sentences_per_second"), "%.2f"),
            fmt(r.get("tokens_per_second"), "%.1f"), fmt(r.get("peak_rss_mb"), "%.0f"),
            fmt(r.get("gpu_memory_mb"), "%.0f"), fmt(r.get("gpu_process_mb"), "%.0f"),
            fmt(r.get("seconds"), "%.2f"), fmt(r.get("bleu"), "%.1f")))
    process = results["xlate_translate_process"]
    if process:
        print("`xlate translate` as a process on the same file: %.2f s (%.1f sentences/s, load "
              "included), peak RSS %.0f MB, BLEU %s" % (
                  process["process_seconds"], n_sent / process["process_seconds"],
                  process["peak_rss_mb"], fmt(process.get("bleu"), "%.1f")))
    ratio = None
    measure = "sentences_per_second" if natural else "tokens_per_second"
    if results["xlate"] and results["ctranslate2"]:
        ct2_rate = results["ctranslate2"][measure]
        xl_rate = results["xlate"].get(measure)
        if ct2_rate and xl_rate is not None:
            ratio = xl_rate / ct2_rate
            print("ratio xlate/CT2 %s: %.3f" % (measure.replace("_per_second", "/s"), ratio))
    if len(xlate_runs) == len(ct2_runs) > 1:
        # Run k of each system ran back to back: the spread of these ratios is the machine's.
        paired = [x.get(measure) / c[measure] for x, c in zip(xlate_runs, ct2_runs)
                  if x.get(measure) and c.get(measure)]
        if paired:
            results["paired_ratios_" + measure] = paired
            print("ratio of each pair of runs (CTranslate2 then xlate): %s; median %.3f"
                  % (", ".join("%.3f" % r for r in paired), statistics.median(paired)))
    if results["xlate"]:
        shares = ["%s %.2f" % (name[:-len("_share")], results["xlate"][name])
                  for name in ("matmul_share", "attention_share", "softmax_share",
                               "other_ops_share", "transfer_share") if name in results["xlate"]]
        if shares:
            print("xlate wall-time shares (on a GPU: host launch time; transfer = waiting for "
                  "the device): " + ", ".join(shares))
    if xlate_note:
        print("note: %s" % xlate_note)
    results["ratio_xlate_over_ct2_" + measure] = ratio

    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)
            f.write("\n")
    return 0


def bleu(xlate, hypotheses, references, work_dir, name):
    """Corpus BLEU of hypotheses against references (`xlate bleu`, sacreBLEU's default)."""
    hyp_path = os.path.join(work_dir, name + "_hyp.txt")
    ref_path = os.path.join(work_dir, name + "_ref.txt")
    for path, lines in ((hyp_path, hypotheses), (ref_path, references)):
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
    done = subprocess.run([xlate, "bleu", "--ref", ref_path, "--hyp", hyp_path, "--json"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        print("warning: xlate bleu failed: " + done.stderr.strip(), file=sys.stderr)
        return None
    report = last_json_line(done.stdout)
    return report["sacrebleu"]["score"] if report else None


def time_xlate_translate(args, model_dir, sources, references, work_dir):
    """`xlate translate` on the plan's sentences as one process, the way a user runs it."""
    source_path = os.path.join(work_dir, "source.txt")
    output_path = os.path.join(work_dir, "xlate_translate_output.txt")
    with open(source_path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in sources))
    cmd = [args.xlate, "translate", "--model_dir", model_dir, "--input", source_path,
           "--output", output_path, "--threads", str(args.threads), "--beam_size",
           str(args.beam_size), "--batch_size", str(args.batch_size), "--length_penalty",
           str(args.length_penalty), "--max_extra_length", str(args.max_extra),
           "--split_sentences=false", "--device", args.device,
           "--compute_type", args.compute_type, "--workers", str(args.workers)]
    print("running " + " ".join(cmd), file=sys.stderr)
    status, facts = run_measured(cmd, os.path.join(work_dir, "xlate_translate_stdout.txt"))
    if status != 0:
        print("warning: xlate translate failed (exit status %d)" % status, file=sys.stderr)
        return None
    warn_if_busy("xlate translate", facts)
    facts["bleu"] = bleu(args.xlate, read_lines(output_path, 0), references, work_dir,
                         "xlate_translate")
    return facts


if __name__ == "__main__":
    sys.exit(main())
