#!/usr/bin/env python3
"""Inline HTML tags: are they put back on the right words? 50 sentences of Multi30k test_2016,
each with one source word wrapped in <b>, translated as one HTML document (`xlate translate
--mime_type text/html`); a tag is on the right words when the <b> element of the output (read by
Python's html.parser, not by xlate's parser) holds the German word that translates the wrapped
one. The pairs: a word of the reference that the plain translation of the sentence uses too, and
the source word that co-occurs with it most in the training data (Dice >= --min_dice over
Multi30k train and general-en-de, as bench/terminology.py builds its terms).

  python3 bench/html_tags.py [--xlate build/cli/xlate] [--model_dir models/en-de-general]
      [--sentences 50] [--split test_2016_flickr] [--json_out FILE]

--split val draws the sentences from Multi30k val instead (what engine/inline_markup.h's choice
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
from terminology import add_arguments, read, translate, word_pairs, words  # noqa: E402


class BoldText(html.parser.HTMLParser):
    """Per <p> element: the text of its <b> element and its whole text."""

    def __init__(self):
        super().__init__()
        self.paragraphs, self.depth_b = [], 0

    def handle_starttag(self, tag, attrs):
        if tag == "p":
            self.paragraphs.append({"b": "", "all": ""})
        elif tag == "b":
            self.depth_b += 1

    def handle_endtag(self, tag):
        if tag == "b":
            self.depth_b -= 1

    def handle_data(self, data):
        if not self.paragraphs:
            return
        self.paragraphs[-1]["all"] += data
        if self.depth_b:
            self.paragraphs[-1]["b"] += data


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_arguments(parser)
    parser.add_argument("--sentences", type=int, default=50)
    parser.add_argument("--split", default="test_2016_flickr",
                        help="the Multi30k file the sentences come from (val to tune)")
    args = parser.parse_args()

    sources = read(f"{args.data_dir}/multi30k/{args.split}.en.gz")
    references = read(f"{args.data_dir}/multi30k/{args.split}.de.gz")
    plain, _ = translate(args, sources)
    # Candidates: reference nouns (capitalised, 5+ letters) the plain translation uses too.
    shared = [[w for w in dict.fromkeys(words(r)) if w[0].isupper() and len(w) >= 5
               and w in words(p)] for r, p in zip(references, plain)]
    chosen = []
    for i, best in enumerate(word_pairs(args, sources, shared)):
        if best:
            # The first whole-word occurrence of the source word, in its own spelling.
            match = re.search(rf"\b{re.escape(best[1])}\b", sources[i], re.IGNORECASE)
            if match:
                source = sources[i]
                tagged = (html.escape(source[:match.start()]) + "<b>" + html.escape(match[0]) +
                          "</b>" + html.escape(source[match.end():]))
                chosen.append({"sentence": i, "source": best[1], "target": best[2],
                               "html": tagged})
        if len(chosen) == args.sentences:
            break
    document = "".join(f"<p>{c['html']}</p>\n" for c in chosen)
    output, _ = translate(args, [document.rstrip("\n")], ("--mime_type", "text/html"))
    reader = BoldText()
    reader.feed("\n".join(output))
    if len(reader.paragraphs) != len(chosen):
        sys.exit(f"{len(reader.paragraphs)} paragraphs came back for {len(chosen)}")
    on_word = exactly = anywhere = 0
    for case, paragraph in zip(chosen, reader.paragraphs):
        case["output"], case["bold"] = paragraph["all"], paragraph["b"]
        on_word += case["target"] in paragraph["b"]
        # The tag holds the word and nothing else (punctuation aside).
        exactly += paragraph["b"].strip(" .,;:!?\"'()") == case["target"]
        anywhere += case["target"] in paragraph["all"]
    refs = [references[c["sentence"]] for c in chosen]
    report = {"split": args.split, "sentences": len(chosen),
              "tag_on_the_word": on_word / len(chosen),
              "tag_is_the_word": exactly / len(chosen),
              "word_in_the_translation": anywhere / len(chosen),
              # What the markup costs the text (nothing when the block is translated whole).
              "bleu_plain": sacrebleu.corpus_bleu([plain[c["sentence"]] for c in chosen],
                                                  [refs]).score,
              "bleu_with_tags": sacrebleu.corpus_bleu([" ".join(c["output"].split())
                                                       for c in chosen], [refs]).score,
              "cases": chosen}
    print(f"{len(chosen)} sentences with one <b> each: the tag holds the word's translation in "
          f"{100 * report['tag_on_the_word']:.0f}%, that word alone in "
          f"{100 * report['tag_is_the_word']:.0f}%; the translation has the word at all in "
          f"{100 * report['word_in_the_translation']:.0f}% (plain text: 100% by construction)")
    print(f"sacreBLEU of the 50 sentences: plain {report['bleu_plain']:.2f}, with the tag "
          f"(its text) {report['bleu_with_tags']:.2f}")
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
