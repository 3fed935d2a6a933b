#!/usr/bin/env python3
"""Glossaries measured the way a terminology user meets them: how often a translation uses the
glossary's term, BLEU with and without the glossary, and what constrained sentences cost.

The test set: sentences of Multi30k test_2016 whose reference uses a German word that the
baseline translation (beam 4, no glossary) does not, paired with the English source word that
co-occurs with it most in the training data (Dice coefficient over Multi30k train and
general-en-de, at least --min_dice): one such term per sentence, --terms terms, each a
different pair. The glossary is those pairs (TSV). Term use rate: sentences whose translation
contains the target term (as a substring, case-sensitively). BLEU: sacreBLEU on those sentences.

Cost: the whole of test_2016 translated by `xlate translate` without and with the glossary
(given to every line, so every sentence holding a term is constrained: far more than the chosen
ones, as the terms are common words; they share batches with the others), and the chosen
sentences alone, both ways; and through xlate-server (continuous batching): every sentence of test_2016 a
request of its own from --clients concurrent clients, once without and once with the 50 term
sentences asking for the glossary (--glossary terms=FILE). --repeats runs each, alternating,
and the medians are reported. Markup: the chosen sentences with their term's source word in
<b>, translated as one HTML document with the glossary: how often the tag holds the term's
target. Beams: the chosen sentences with the glossary at --constrained_beam_size 6, 8 and 12.

  python3 bench/terminology.py [--xlate build/cli/xlate] [--server build/server/xlate-server]
      [--model_dir models/en-de-general] [--terms 50] [--repeats 3] [--json_out FILE]
"""
import argparse
import collections
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import concurrent.futures
import types

import sacrebleu

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_vs_offline import start_server  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "server", "examples"))
from translate_client import import_stubs  # noqa: E402
WORD = re.compile(r"[^\W\d_]+", re.UNICODE)


def read(path, limit=None):
    """The lines of a text file, gzip-compressed when its name ends in .gz."""
    with (gzip.open(path, "rt", encoding="utf-8") if path.endswith(".gz")
          else open(path, encoding="utf-8")) as f:
        lines = [line.rstrip("\n") for line in f]
    return lines[:limit] if limit else lines


def words(text, lower=False):
    found = WORD.findall(text)
    return [w.lower() for w in found] if lower else found


def constrained_count(sources, terms):
    """How many of `sources` hold one of `terms` (case-folded) where the glossary finds it: a word
    of its own, not part of a longer one (an apostrophe between letters joins, as ICU's word
    boundaries do: "people's" does not hold "people"). The offline runs give the glossary to every
    sentence, so these are constrained, not only the chosen ones."""
    found = re.compile(r"(?<![\w'’])(?:" + "|".join(re.escape(t) for t in terms) +
                       r")(?![\w]|['’]\w)", re.IGNORECASE)
    return sum(1 for s in sources if found.search(s))


def translate(args, lines, extra=()):
    """(translations, seconds) of `lines` through xlate translate, one sentence per line."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
        path = f.name
    try:
        started = time.perf_counter()
        result = subprocess.run([args.xlate, "translate", "--model_dir", args.model_dir,
                                 "--split_sentences=false", "--input", path, *extra],
                                check=True, capture_output=True, text=True,
                                env=dict(os.environ, OMP_NUM_THREADS=str(args.threads)))
        seconds = time.perf_counter() - started
    finally:
        os.unlink(path)
    return result.stdout.rstrip("\n").split("\n"), seconds


def server_seconds(args, glossary, sources, constrained):
    """Seconds for every sentence of `sources` as a request of its own, --clients at a time, on
    one xlate-server; those in `constrained` (indices) with glossary "terms". Returns (timings
    of the plain and the glossary runs, alternating --repeats times; the glossary run's
    translations)."""
    pb2, pb2_grpc = import_stubs()
    import grpc
    server, port = start_server(types.SimpleNamespace(
        server=args.server, model_dir=args.model_dir, threads=args.threads,
        max_queue_delay_ms=5), f"--glossary=terms={glossary}",
        "--max_queued_sentences_per_client=100000")
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = pb2_grpc.TranslatorStub(channel)
    config = pb2.GlossaryConfig(glossary="terms", ignore_case=True)

    def call(i, with_glossary):
        request = pb2.TranslateRequest(contents=[sources[i]])
        if with_glossary and i in constrained:
            request.glossary_config.CopyFrom(config)
        return stub.Translate(request, timeout=600).translations[0].translated_text

    timings, outputs = collections.defaultdict(list), {}
    try:
        with concurrent.futures.ThreadPoolExecutor(args.clients) as pool:
            list(pool.map(lambda i: call(i, False), range(min(64, len(sources)))))  # warm-up
            for _ in range(args.repeats):
                for name, with_glossary in (("server_plain", False), ("server_glossary", True)):
                    started = time.perf_counter()
                    texts = list(pool.map(lambda i: call(i, with_glossary), range(len(sources))))
                    timings[name].append(time.perf_counter() - started)
                    if with_glossary:
                        outputs = {i: texts[i] for i in constrained}
    finally:
        channel.close()
        server.terminate()
        server.wait(60)
    return timings, outputs


def dice_lexicon(args, source_words, target_words):
    """Dice(e, g) = 2·c(e, g) / (c(e) + c(g)) over sentence pairs of the training data, for the
    English words in source_words and German words in target_words."""
    data = args.data_dir
    count_e, count_g, count_eg = collections.Counter(), collections.Counter(), collections.Counter()
    for en_path, de_path in ((f"{data}/multi30k/train.en.gz", f"{data}/multi30k/train.de.gz"),
                             (f"{data}/general-en-de/train.en.gz", f"{data}/general-en-de/train.de.gz")):
        for en, de in zip(read(en_path), read(de_path)):
            es = set(words(en, lower=True)) & source_words
            gs = set(words(de)) & target_words
            count_e.update(es)
            count_g.update(gs)
            count_eg.update((e, g) for e in es for g in gs)
    return lambda e, g: 2 * count_eg[e, g] / max(1, count_e[e] + count_g[g])


def add_arguments(parser):
    """The arguments this bench shares with bench/html_tags.py."""
    parser.add_argument("--xlate", default=os.path.join(REPO, "build", "cli", "xlate"))
    parser.add_argument("--model_dir", default=os.path.join(REPO, "models", "en-de-general"))
    parser.add_argument("--data_dir", default=os.path.join(REPO, "..", "shared", "data"))
    parser.add_argument("--min_dice", type=float, default=0.3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json_out")


def ranked_word_pairs(args, sources, candidates, count):
    """Per sentence, up to `count` pairs (Dice, English word, German word) of the German words in
    candidates[i] and the words of sources[i] with Dice >= --min_dice, the highest first, no
    word in two of them."""
    source_vocabulary = {w for s in sources for w in words(s, lower=True) if len(w) >= 3}
    dice = dice_lexicon(args, source_vocabulary, {w for c in candidates for w in c})
    pairs = []
    for source, german in zip(sources, candidates):
        scored = sorted(((dice(e, g), e, g) for g in german
                         for e in dict.fromkeys(words(source, lower=True))
                         if e in source_vocabulary), key=lambda p: -p[0])
        chosen = []
        for score, e, g in scored:
            if score < args.min_dice or len(chosen) == count:
                break
            if all(e != c[1] and g != c[2] for c in chosen):
                chosen.append((score, e, g))
        pairs.append(chosen)
    return pairs


def word_pairs(args, sources, candidates):
    """Per sentence, None or (Dice, English word, German word): of the German words in
    candidates[i] and the words of sources[i], the pair of highest Dice (>= --min_dice)."""
    return [ranked[0] if ranked else None
            for ranked in ranked_word_pairs(args, sources, candidates, 1)]


def tag_on_term(args, sources, chosen, flags):
    """The share of the chosen sentences whose term, its source word wrapped in <b> and the
    sentences translated as one HTML document with the glossary, comes back inside the <b>."""
    from html_tags import TaggedText, tag_words  # noqa: E402 (html_tags imports this module)
    cases = [(tag_words(sources[i], [(d, e, g)]), g) for i, e, g, d in chosen]
    document = "".join(f"<p>{tagged[0]}</p>" for tagged, _ in cases if tagged)
    output, _ = translate(args, [document], ("--mime_type", "text/html", *flags))
    reader = TaggedText()
    reader.feed("\n".join(output))
    targets = [g for tagged, g in cases if tagged]
    if len(reader.paragraphs) != len(targets):
        sys.exit(f"{len(reader.paragraphs)} paragraphs came back for {len(targets)}")
    return sum(g in p["b"] for g, p in zip(targets, reader.paragraphs)) / len(targets)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_arguments(parser)
    parser.add_argument("--server", default=os.path.join(REPO, "build", "server", "xlate-server"))
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--terms", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip_cost", action="store_true",
                        help="term use, BLEU and tags only: no timed runs")
    args = parser.parse_args()

    sources = read(f"{args.data_dir}/multi30k/test_2016_flickr.en.gz")
    references = read(f"{args.data_dir}/multi30k/test_2016_flickr.de.gz")
    baseline, _ = translate(args, sources)
    # Candidates: a reference noun (capitalised, 5+ letters) the baseline did not use.
    missing = [[w for w in dict.fromkeys(words(r)) if w[0].isupper() and len(w) >= 5
                and w not in words(b)] for r, b in zip(references, baseline)]
    chosen, used_pairs, used_sources = [], set(), set()
    for i, best in enumerate(word_pairs(args, sources, missing)):
        if best and (best[1], best[2]) not in used_pairs and best[1] not in used_sources:
            chosen.append((i, best[1], best[2], best[0]))
            used_pairs.add((best[1], best[2]))
            used_sources.add(best[1])
        if len(chosen) == args.terms:
            break
    if len(chosen) < args.terms:
        print(f"only {len(chosen)} terms found", file=sys.stderr)
    with tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False, encoding="utf-8") as f:
        for _, e, g, _ in chosen:
            f.write(f"{e}\t{g}\n")
        glossary = f.name
    flags = ("--glossary", glossary, "--glossary_ignore_case")
    subset = [sources[i] for i, *_ in chosen]
    subset_refs = [references[i] for i, *_ in chosen]
    with_glossary, _ = translate(args, subset, flags)
    without = [baseline[i] for i, *_ in chosen]

    def use_rate(outputs):
        return sum(g in out for (_, _, g, _), out in zip(chosen, outputs)) / len(chosen)

    report = {
        "terms": [{"sentence": i, "source": e, "target": g, "dice": round(d, 3)}
                  for i, e, g, d in chosen],
        "term_use_without": use_rate(without), "term_use_with": use_rate(with_glossary),
        "bleu_without": sacrebleu.corpus_bleu(without, [subset_refs]).score,
        "bleu_with": sacrebleu.corpus_bleu(with_glossary, [subset_refs]).score,
        "tag_on_the_term": tag_on_term(args, sources, chosen, flags),
    }
    print(f"HTML with each term's source word in <b>, with the glossary: the tag holds the "
          f"term's target in {100 * report['tag_on_the_term']:.0f}%")
    # A wider beam for the constrained sentences only (--constrained_beam_size).
    report["constrained_beams"] = {}
    for beam in (6, 8, 12):
        outputs, seconds = translate(args, subset, (*flags, f"--constrained_beam_size={beam}"))
        report["constrained_beams"][beam] = {
            "term_use": use_rate(outputs), "seconds": seconds,
            "bleu": sacrebleu.corpus_bleu(outputs, [subset_refs]).score}
        print(f"--constrained_beam_size {beam}: term use {100 * use_rate(outputs):.0f}%, BLEU "
              f"{report['constrained_beams'][beam]['bleu']:.2f}, {seconds:.2f} s for the "
              f"{len(subset)} sentences")
    if args.skip_cost:
        print(json.dumps({k: v for k, v in report.items() if k != "terms"}))
        return
    # Cost: alternating runs, medians.
    timings = collections.defaultdict(list)
    for _ in range(args.repeats):
        for name, lines, extra in (("all_plain", sources, ()), ("all_glossary", sources, flags),
                                   ("subset_plain", subset, ()), ("subset_glossary", subset, flags)):
            timings[name].append(translate(args, lines, extra)[1])
    served, served_outputs = server_seconds(args, glossary, sources, {i for i, *_ in chosen})
    timings.update(served)
    report["term_use_server"] = sum(
        g in served_outputs[i] for i, _, g, _ in chosen) / len(chosen)
    report["sentences_constrained_offline"] = constrained_count(sources, [e for _, e, _, _ in chosen])
    os.unlink(glossary)
    median = {name: statistics.median(values) for name, values in timings.items()}
    report["server_cost"] = median["server_glossary"] / median["server_plain"] - 1
    report["seconds"] = median
    report["all_cost"] = median["all_glossary"] / median["all_plain"] - 1
    report["subset_cost"] = median["subset_glossary"] / median["subset_plain"] - 1
    print(f"{len(chosen)} terms on {len(chosen)} sentences of test_2016 (Dice >= {args.min_dice})")
    print(f"term use: without glossary {100 * report['term_use_without']:.0f}%, "
          f"with {100 * report['term_use_with']:.0f}%")
    print(f"BLEU of those sentences: without {report['bleu_without']:.2f}, "
          f"with {report['bleu_with']:.2f}")
    print(f"test_2016 ({len(sources)} sentences, {report['sentences_constrained_offline']} "
          f"holding a term, {len(chosen)} of them chosen): "
          f"{median['all_plain']:.2f} s plain, {median['all_glossary']:.2f} s with the glossary "
          f"({100 * report['all_cost']:+.1f}%)")
    print(f"the {len(chosen)} sentences alone: {median['subset_plain']:.2f} s plain, "
          f"{median['subset_glossary']:.2f} s constrained ({100 * report['subset_cost']:+.1f}%)")
    print(f"xlate-server, test_2016 as {len(sources)} requests from {args.clients} clients: "
          f"{median['server_plain']:.2f} s plain, {median['server_glossary']:.2f} s with "
          f"{len(chosen)} of them constrained ({100 * report['server_cost']:+.1f}%); term use "
          f"{100 * report['term_use_server']:.0f}%")
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
