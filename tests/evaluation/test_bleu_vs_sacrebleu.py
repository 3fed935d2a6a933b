#!/usr/bin/env python3
"""`xlate bleu` against the sacrebleu package, on real and adversarial data.

For every case, hypotheses and references are written to files, `xlate bleu --json` scores them
(cased, then with --lowercase), and sacrebleu.corpus_bleu scores the same lines with
  - its defaults (13a, exp smoothing, cased)            vs xlate's "sacrebleu" score,
  - smooth_method='none', tokenize='13a', lowercase=F/T  vs xlate's "tokenised" score.
The n-gram counts and lengths must be identical and the scores within 0.01 BLEU. Also checks the
command's errors (missing file, line-count mismatch, invalid UTF-8) and the stdin path.

usage: test_bleu_vs_sacrebleu.py --xlate BIN [--data_dir DIR]  (default: $XLATE_DATA_DIR)
Exit status 0 when everything agrees, 1 otherwise.
"""
import argparse
import gzip
import json
import logging
import os
import random
import subprocess
import sys
import tempfile
import unicodedata

import sacrebleu

TOLERANCE = 0.01


def read_lines(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline="\n") as f:
        text = f.read()
    if text.endswith("\n"):
        text = text[:-1]
    return text.split("\n")


def write_lines(path, lines):
    # '\n' only separates lines, as `xlate bleu` reads them; other line breaks stay inside.
    with open(path, "wb") as f:
        f.write(("\n".join(lines) + "\n").encode("utf-8"))


# ---------------------------------------------------------------------------------------------
# Deterministic perturbations: hypotheses that are realistic variations of the references.

def perturb(lines, rng):
    """Mostly-right system output: per line, one edit (or none)."""
    out = []
    for i, line in enumerate(lines):
        words = line.split(" ")
        r = rng.random()
        if r < 0.08:  # a neighbouring sentence instead (misaligned output)
            out.append(lines[(i + 1) % len(lines)])
            continue
        if r < 0.16:
            out.append(line.lower())
            continue
        if r < 0.30 and len(words) > 1:
            del words[rng.randrange(len(words))]
        elif r < 0.42 and len(words) > 3:
            k = rng.randrange(len(words) - 2)
            window = words[k:k + 3]
            rng.shuffle(window)
            words[k:k + 3] = window
        elif r < 0.48:
            k = rng.randrange(len(words))
            words.insert(k, words[k])
        elif r < 0.54:
            words = words[: max(1, len(words) // 2)]
        elif r < 0.56:
            words = []
        elif r < 0.62:
            words = [w.upper() if rng.random() < 0.3 else w for w in words]
        out.append(" ".join(words))
    return out


def weak_system(lines, rng):
    """A poor system: about half the words kept, others replaced, some local reordering."""
    vocabulary = sorted({w for line in lines for w in line.split()})
    out = []
    for line in lines:
        words = []
        for w in line.split():
            r = rng.random()
            if r < 0.55:
                words.append(w)
            elif r < 0.85:
                words.append(rng.choice(vocabulary))
            # else: dropped
        for _ in range(len(words) // 4):
            if len(words) > 1:
                k = rng.randrange(len(words) - 1)
                words[k], words[k + 1] = words[k + 1], words[k]
        out.append(" ".join(words))
    return out


# Fragments that exercise the 13a rules, entity unescaping, Unicode whitespace and lowercasing.
FRAGMENTS = [
    "Hello,", "world!", "$1,000.50", "(approx.)", "3.5%", "5-6", "well-known", "U.S.A.",
    "e.g.,", "&quot;quoted&quot;", "&amp;", "&lt;tag&gt;", "&amp;lt;", "&amp;quot;", "&apos;s",
    "<skipped>", "...", "--", "\u2014", "\u201eZitat\u201c", "\u00abx\u00bb", "'s",
    "Gr\u00fc\u00dfe",
    "STRASSE", "Stra\u00dfe", "\u1e9e", "\u0130stanbul", "\u039f\u0394\u039f\u03a3",
    "\u03a3\u039f\u03a6\u039f\u03a3.", "\u03a3'", "na\u00efve", "caf\u00e9", "\u00a0", "\u2009",
    "\u3000", "\x1c", "\r", "\t", "\x85", "\u2028", "a.b.c", "1.", ".5", ",x", "x,", "2014-2015",
    "a/b", "[1]", "{x}", "~", "^", "_", "|", "\\", "@user", "#tag", "*", "+", "=", "?", ";", ":",
    "\u01c5", "\u01c4", "\u041f\u0420\u0418\u0412\u0415\u0422", "\u041c\u0438\u0440",
    "\u00c6\u00d8\u00c5", "\u00c0\u00c9\u00ce", "\ufb01", "\u216b", "\uff26\uff55\uff4c\uff4c",
    "\u200b", "x\u0301", "\u00c4pfel", "\u00d6l", "\u00dcber", "10,000", "0.5", "-3", "3-",
    "a-", "-\n", "The", "the", "THE", "Mann", "mann", "Hund", "\U0001f600", "\u4e2d\u6587",
]


def adversarial_corpus(rng, n):
    references, hypotheses = [], []
    for _ in range(n):
        fragments = [rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 14))]
        separators = [rng.choice([" ", " ", " ", ""]) for _ in fragments]
        reference = "".join(f + s for f, s in zip(fragments, separators))
        kept = []
        for f in fragments:
            r = rng.random()
            if r < 0.6:
                kept.append(f)
            elif r < 0.75:
                kept.append(f.upper() if rng.random() < 0.5 else f.lower())
            elif r < 0.9:
                kept.append(rng.choice(FRAGMENTS))
        hypothesis = "".join(f + rng.choice([" ", " ", ""]) for f in kept)
        references.append(reference.replace("\n", " "))
        hypotheses.append(hypothesis.replace("\n", " "))
    return hypotheses, references


def lowercase_table_corpus():
    """One line per code point that Python's str.lower() changes, against its lowercase form:
    with lowercasing, every unigram matches only if xlate lowercases exactly like Python."""
    if unicodedata.unidata_version == "14.0.0":
        limit = 0x110000  # xlate's table is Unicode 14.0, as Python 3.11
    else:
        limit = 0x0530  # Latin, Greek, Cyrillic: stable across Unicode versions
    hypotheses, references = [], []
    for c in range(limit):
        ch = chr(c)
        if ch.lower() != ch and not ch.isspace():
            hypotheses.append(ch)
            references.append(ch.lower())
    return hypotheses, references


# ---------------------------------------------------------------------------------------------

def run_xlate(xlate, hypotheses_path, references_path, extra=(), stdin_bytes=None):
    command = [xlate, "bleu", "--ref", references_path, "--json", *extra]
    if hypotheses_path is not None:
        command += ["--hyp", hypotheses_path]
    return subprocess.run(command, input=stdin_bytes, capture_output=True, timeout=60)


def sacrebleu_scores(hypotheses, references):
    cased = sacrebleu.corpus_bleu(hypotheses, [references])
    lowercased = sacrebleu.corpus_bleu(hypotheses, [references], smooth_method="none",
                                       tokenize="13a", lowercase=True)
    # The cased tokenised score has the same statistics as the default one (same tokenisation,
    # same case), only without smoothing: sacreBLEU's own compute_bleu applies that.
    tokenised = sacrebleu.BLEU.compute_bleu(list(cased.counts), list(cased.totals), cased.sys_len,
                                            cased.ref_len, smooth_method="none")
    return {"sacrebleu": cased, "tokenised": tokenised, "tokenised_lc": lowercased}


def compare(name, ours, theirs, failures):
    """Returns |ours - theirs| of the score; records mismatches in `failures`: a score off by
    TOLERANCE or more, or any difference in the n-gram counts, lengths, precisions or BP."""
    diff = abs(ours["score"] - theirs.score)
    problems = []
    if diff >= TOLERANCE:
        problems.append(f"score {ours['score']:.4f} vs sacrebleu {theirs.score:.4f}")
    if ours["matches"] != list(theirs.counts) or ours["totals"] != list(theirs.totals):
        problems.append(f"counts {ours['matches']}/{ours['totals']} vs "
                        f"{list(theirs.counts)}/{list(theirs.totals)}")
    # Same statistics and the same arithmetic: precisions and BP agree to rounding, which also
    # pins down the smoothing of orders without a match.
    if any(abs(a - b) > 1e-9 for a, b in zip(ours["precisions"], theirs.precisions)):
        problems.append(f"precisions {ours['precisions']} vs {list(theirs.precisions)}")
    if abs(ours["brevity_penalty"] - theirs.bp) > 1e-12:
        problems.append(f"BP {ours['brevity_penalty']} vs {theirs.bp}")
    if ours["hyp_len"] != theirs.sys_len or ours["ref_len"] != theirs.ref_len:
        problems.append(f"lengths {ours['hyp_len']}/{ours['ref_len']} vs "
                        f"{theirs.sys_len}/{theirs.ref_len}")
    for p in problems:
        failures.append(f"{name}: {p}")
    return diff


def check_case(xlate, workdir, case, hypotheses, references, failures, use_stdin=False):
    assert len(hypotheses) == len(references)
    hyp_path = os.path.join(workdir, f"{case}.hyp")
    ref_path = os.path.join(workdir, f"{case}.ref")
    write_lines(hyp_path, hypotheses)
    write_lines(ref_path, references)
    outputs = {}
    for lowercase in (False, True):
        extra = ["--lowercase"] if lowercase else []
        if use_stdin:
            with open(hyp_path, "rb") as f:
                result = run_xlate(xlate, None, ref_path, extra, stdin_bytes=f.read())
        else:
            result = run_xlate(xlate, hyp_path, ref_path, extra)
        if result.returncode != 0:
            failures.append(f"{case}: xlate bleu exited {result.returncode}: "
                            f"{result.stderr.decode(errors='replace')}")
            return None
        outputs[lowercase] = json.loads(result.stdout)
        if outputs[lowercase]["sentences"] != len(hypotheses):
            failures.append(f"{case}: {outputs[lowercase]['sentences']} sentences read, "
                            f"expected {len(hypotheses)}")
    theirs = sacrebleu_scores(hypotheses, references)
    diffs = {
        "sacrebleu": compare(f"{case} sacreBLEU", outputs[False]["sacrebleu"],
                             theirs["sacrebleu"], failures),
        "tokenised": compare(f"{case} tokenised", outputs[False]["tokenised"],
                             theirs["tokenised"], failures),
        "tokenised_lc": compare(f"{case} tokenised lc", outputs[True]["tokenised"],
                                theirs["tokenised_lc"], failures),
    }
    if outputs[True]["sacrebleu"] != outputs[False]["sacrebleu"]:
        failures.append(f"{case}: --lowercase changed the sacreBLEU score")
    print(f"{case:28s} n={len(hypotheses):5d}  sacreBLEU {theirs['sacrebleu'].score:6.2f} "
          f"tok {theirs['tokenised'].score:6.2f} tok-lc {theirs['tokenised_lc'].score:6.2f}  "
          f"max|diff| {max(diffs.values()):.2e}")
    return outputs


def check_errors(xlate, workdir, failures):
    ref_path = os.path.join(workdir, "errors.ref")
    write_lines(ref_path, ["eins zwei", "drei vier", "f\u00fcnf"])

    def expect_failure(what, result, *needles):
        stderr = result.stderr.decode(errors="replace")
        if result.returncode <= 0:  # 0 = no error reported, < 0 = killed by a signal
            failures.append(f"{what}: exit status {result.returncode}, stderr {stderr!r}")
        elif not all(n in stderr for n in needles):
            failures.append(f"{what}: stderr {stderr!r} lacks {needles}")

    expect_failure("missing --ref",
                   run_xlate(xlate, ref_path, os.path.join(workdir, "no_such_file")),
                   "cannot open --ref", "no_such_file")
    expect_failure("missing --hyp",
                   run_xlate(xlate, os.path.join(workdir, "no_such_hyp"), ref_path),
                   "cannot open --hyp")
    short_path = os.path.join(workdir, "errors.short")
    write_lines(short_path, ["eins zwei", "drei"])
    expect_failure("line-count mismatch", run_xlate(xlate, short_path, ref_path),
                   "2 lines", "have 3")
    bad_path = os.path.join(workdir, "errors.bad_utf8")
    with open(bad_path, "wb") as f:
        f.write(b"eins zwei\ndrei \xff vier\nf\xc3\xbcnf\n")
    expect_failure("invalid UTF-8", run_xlate(xlate, bad_path, ref_path),
                   "hypothesis line 2", "UTF-8")
    no_ref = subprocess.run([xlate, "bleu", "--hyp", short_path], capture_output=True,
                            timeout=60)
    expect_failure("no --ref", no_ref, "--ref is required")
    # The plain output: two lines, sacreBLEU's format.
    text = subprocess.run([xlate, "bleu", "--ref", ref_path, "--hyp", ref_path, "--lowercase"],
                          capture_output=True, timeout=60)
    lines = text.stdout.decode().splitlines()
    if (text.returncode != 0 or len(lines) != 2 or not lines[0].startswith("sacreBLEU: BLEU = ")
            or not lines[1].startswith("tokenised BLEU (lowercased): BLEU = ")):
        failures.append(f"plain output: {text.stdout!r} {text.stderr!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--xlate", required=True, help="the xlate binary")
    parser.add_argument("--data_dir", default=os.environ.get("XLATE_DATA_DIR"),
                        help="the shared data directory (its README.md describes it)")
    args = parser.parse_args()
    logging.getLogger("sacrebleu").setLevel(logging.ERROR)  # "lines end in a tokenized period"
    if not args.data_dir:
        sys.exit("--data_dir or XLATE_DATA_DIR is required")
    data = args.data_dir
    rng = random.Random(20240601)
    multi30k = read_lines(os.path.join(data, "multi30k/test_2016_flickr.de.gz"))
    newstest2014 = read_lines(os.path.join(data, "wmt14/newstest2014.de"))
    newstest2013 = read_lines(os.path.join(data, "wmt14/newstest2013.de"))
    iwslt = read_lines(os.path.join(data, "iwslt14/test.en.gz"))[:500]  # has &quot; &apos; ...

    # Sizes keep the whole test to a few seconds (sacrebleu needs ~0.4 ms a line here).
    weak_multi30k = read_lines(os.path.join(data, "multi30k/test_2017_flickr.de.gz"))[:500]
    cases = [
        ("multi30k_2016_perturbed", perturb(multi30k, rng), multi30k, False),
        ("newstest2014_perturbed", perturb(newstest2014[:1000], rng), newstest2014[:1000], True),
        ("multi30k_2017_weak", weak_system(weak_multi30k, rng), weak_multi30k, False),
        ("newstest2014_weak", weak_system(newstest2014[1000:2000], rng), newstest2014[1000:2000],
         False),
        ("newstest2013_vs_2014", newstest2013[:300], newstest2014[:300], False),
        ("iwslt14_tokenised_perturbed", perturb(iwslt, rng), iwslt, False),
        ("adversarial_fragments", *adversarial_corpus(rng, 1000), False),
        ("lowercase_table", *lowercase_table_corpus(), False),
    ]
    failures = []
    with tempfile.TemporaryDirectory(prefix="xlate_bleu_") as workdir:
        for case, hypotheses, references, use_stdin in cases:
            outputs = check_case(args.xlate, workdir, case, hypotheses, references, failures,
                                 use_stdin)
            if case == "lowercase_table" and outputs is not None:
                matched = outputs[True]["tokenised"]["matches"][0]
                if matched != len(hypotheses):
                    failures.append(f"lowercase_table: {len(hypotheses) - matched} code points "
                                    "lowercase differently from Python's str.lower()")
        check_errors(args.xlate, workdir, failures)
    if failures:
        print(f"FAILED ({len(failures)}):")
        for f in failures:
            print("  " + f)
        return 1
    print("OK: xlate bleu agrees with sacrebleu", sacrebleu.__version__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
