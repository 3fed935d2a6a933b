#!/usr/bin/env python3
"""Inline HTML tags: are they put back on the right words? 50 sentences of Multi30k test_2016,
each with one source word wrapped in <b>, translated as one HTML document (`xlate translate
--mime_type text/html`); a tag is on the right words when the <b> element of the output (read by
Python's html.parser, not by xlate's parser) holds the German word that translates the wrapped
one. The pairs: a word of the reference that the plain translation of the sentence uses too, and
the source word that co-occurs with it most in the training data (Dice >= --min_dice over
Multi30k train and general-en-de, as bench/terminology.py builds its terms).

--tags 2 wraps two words of each sentence, the first in the source in <b>, the second in <i>
(the two best pairs, no word in both), and reports how often both tags hold their words, and
how often among the sentences whose plain translation has the two German words in the other
order (the tags must swap places with them).

  python3 bench/html_tags.py [--xlate build/cli/xlate] [--model_dir models/en-de-general]
      [--sentences 50] [--tags 1|2] [--split test_2016_flickr] [--json_out FILE]

--split newstest2014 draws them from WMT's news (longer sentences, where German moves words
more); --split val draws the sentences from Multi30k val instead (what document/inline_markup.h's choice
of attention layer was tuned on; the test set is only measured).
"""
import argparse
import html
import html.parser
import json
import os
import re
import sys

import sacrebleu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from terminology import add_arguments, ranked_word_pairs, read, translate, words  # noqa: E402


class TaggedText(html.parser.HTMLParser):
    """Per <p> element: the text of its <b> and <i> elements and its whole text."""

    def __init__(self):
        super().__init__()
        self.paragraphs, self.depth = [], {"b": 0, "i": 0}

    def handle_starttag(self, tag, attrs):
        if tag == "p":
            self.paragraphs.append({"b": "", "i": "", "all": ""})
        elif tag in self.depth:
            self.depth[tag] += 1

    def handle_endtag(self, tag):
        if tag in self.depth:
            self.depth[tag] -= 1

    def handle_data(self, data):
        if not self.paragraphs:
            return
        self.paragraphs[-1]["all"] += data
        for tag, depth in self.depth.items():
            if depth:
                self.paragraphs[-1][tag] += data


def tag_words(source, pairs):
    """The source with each pair's English word (its first whole-word occurrence) wrapped, the
    first in the sentence in <b>, the next in <i>; None when a word is missing or they overlap.
    Returns (html, [(tag, English, German), ...] in the source's order)."""
    found = []
    for _, english, german in pairs:
        match = re.search(rf"\b{re.escape(english)}\b", source, re.IGNORECASE)
        if not match:
            return None
        found.append((match.start(), match.end(), german))
    found.sort()
    if any(a[1] > b[0] for a, b in zip(found, found[1:])):
        return None
    out, at, tagged = "", 0, []
    for (begin, end, german), tag in zip(found, ("b", "i")):
        out += html.escape(source[at:begin]) + f"<{tag}>" + html.escape(source[begin:end]) + \
            f"</{tag}>"
        tagged.append((tag, source[begin:end], german))
        at = end
    return out + html.escape(source[at:]), tagged


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_arguments(parser)
    parser.add_argument("--sentences", type=int, default=50)
    parser.add_argument("--split", default="test_2016_flickr",
                        help="the Multi30k file the sentences come from (val to tune), or "
                        "newstest2013 / newstest2014 (WMT's news)")
    parser.add_argument("--tags", type=int, choices=(1, 2), default=1,
                        help="tagged words per sentence")
    args = parser.parse_args()

    if args.split.startswith("newstest"):  # WMT's news, where word order changes more
        sources = read(f"{args.data_dir}/wmt14/{args.split}.en")
        references = read(f"{args.data_dir}/wmt14/{args.split}.de")
    else:
        sources = read(f"{args.data_dir}/multi30k/{args.split}.en.gz")
        references = read(f"{args.data_dir}/multi30k/{args.split}.de.gz")
    plain, _ = translate(args, sources)
    # Candidates: reference nouns (capitalised, 5+ letters) the plain translation uses too.
    shared = [[w for w in dict.fromkeys(words(r)) if w[0].isupper() and len(w) >= 5
               and w in words(p)] for r, p in zip(references, plain)]
    chosen = []
    for i, pairs in enumerate(ranked_word_pairs(args, sources, shared, args.tags)):
        tagged = tag_words(sources[i], pairs) if len(pairs) == args.tags else None
        if tagged:
            german = [g for _, _, g in tagged[1]]
            plain_words = words(plain[i])
            chosen.append({"sentence": i, "source": [e for _, e, _ in tagged[1]],
                           "target": german, "html": tagged[0],
                           # The German words in the other order than their English ones.
                           "reordered": args.tags == 2 and
                           plain_words.index(german[0]) > plain_words.index(german[1])})
        if len(chosen) == args.sentences:
            break
    document = "".join(f"<p>{c['html']}</p>\n" for c in chosen)
    output, _ = translate(args, [document.rstrip("\n")], ("--mime_type", "text/html"))
    reader = TaggedText()
    reader.feed("\n".join(output))
    if len(reader.paragraphs) != len(chosen):
        sys.exit(f"{len(reader.paragraphs)} paragraphs came back for {len(chosen)}")
    on_word = exactly = strictly = anywhere = 0
    reordered = reordered_on_words = 0
    for case, paragraph in zip(chosen, reader.paragraphs):
        tags = ("b", "i")[:args.tags]
        case["output"] = paragraph["all"]
        case["tagged"] = [paragraph[t] for t in tags]
        holds = all(g in paragraph[t] for t, g in zip(tags, case["target"]))
        on_word += holds
        # The tag holds the word and nothing else (punctuation aside; strictly: no punctuation
        # either, as the source's tag held none).
        exactly += all(paragraph[t].strip(" .,;:!?\"'()") == g for t, g in zip(tags, case["target"]))
        strictly += all(paragraph[t] == g for t, g in zip(tags, case["target"]))
        anywhere += all(g in paragraph["all"] for g in case["target"])
        reordered += case["reordered"]
        reordered_on_words += case["reordered"] and holds
    refs = [references[c["sentence"]] for c in chosen]
    report = {"split": args.split, "sentences": len(chosen), "tags": args.tags,
              "tag_on_the_word": on_word / len(chosen),
              "tag_is_the_word": exactly / len(chosen),
              "tag_is_the_word_strictly": strictly / len(chosen),
              "word_in_the_translation": anywhere / len(chosen),
              "reordered": reordered,
              "reordered_on_the_words": reordered_on_words,
              # What the markup costs the text (nothing when the block is translated whole).
              "bleu_plain": sacrebleu.corpus_bleu([plain[c["sentence"]] for c in chosen],
                                                  [refs]).score,
              "bleu_with_tags": sacrebleu.corpus_bleu([" ".join(c["output"].split())
                                                       for c in chosen], [refs]).score,
              "cases": chosen}
    what = "one <b>" if args.tags == 1 else "a <b> and an <i>"
    print(f"{len(chosen)} sentences with {what} each: the tags hold their words' translations in "
          f"{100 * report['tag_on_the_word']:.0f}%, those words alone in "
          f"{100 * report['tag_is_the_word']:.0f}% ({100 * report['tag_is_the_word_strictly']:.0f}% "
          f"without punctuation the source's tag did not hold); the translation has the words at "
          f"all in {100 * report['word_in_the_translation']:.0f}% (plain text: 100% by "
          f"construction)")
    if args.tags == 2:
        print(f"{reordered} sentences translate the two words in the other order: both tags on "
              f"their words in {reordered_on_words}")
    print(f"sacreBLEU of the {len(chosen)} sentences: plain {report['bleu_plain']:.2f}, with the "
          f"tags (their text) {report['bleu_with_tags']:.2f}")
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
