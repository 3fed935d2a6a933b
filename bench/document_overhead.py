"""What a file format costs, the way a user meets it (issue 69):

1. A 50-page .docx (newstest2014's English, four sentences a paragraph, a bold and an italic run
   in every paragraph, as python-docx writes it) through `xlate translate --input X.docx
   --output Y.docx`, against the same paragraphs as a text file, one paragraph a line, through
   `xlate translate --input X.txt` (the same sentences, the same model and beam). The two
   alternate, A B A B, and the ratio is taken pair by pair: the format's overhead is parsing and
   writing the archive and the alignments that place the runs' formatting.
2. A one-sentence /v1/translate call's latency on an idle server, and while a document job
   (POST /v1/documents) of that .docx runs: the job's sentences share the engine with the
   interactive call's (the scheduler's turns go round the clients).

Writes bench/results/document_overhead.json.
  python3 bench/document_overhead.py [--xlate build/cli/xlate] [--server build/server/xlate-server]
      [--model models/en-de-general] [--pages 50] [--pairs 3] [--threads 2]
"""
import argparse
import base64
import datetime
import io
import json
import os
import re
import socket
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request

import docx

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SENTENCES_PER_PARAGRAPH = 4
PARAGRAPHS_PER_PAGE = 6  # about 500 words a page with newstest's sentences


def paragraphs(pages):
    with open(os.path.join(REPO, "..", "shared", "data", "wmt14", "newstest2014.en"),
              encoding="utf-8") as f:
        sentences = [line.strip() for line in f if line.strip()]
    count = pages * PARAGRAPHS_PER_PAGE
    return [" ".join(sentences[i * SENTENCES_PER_PARAGRAPH:(i + 1) * SENTENCES_PER_PARAGRAPH])
            for i in range(count)]


def make_docx(texts):
    document = docx.Document()
    for text in texts:
        words = text.split(" ")
        paragraph = document.add_paragraph()
        paragraph.add_run(" ".join(words[:3]) + " ")
        paragraph.add_run(words[3] + " ").bold = True
        paragraph.add_run(" ".join(words[4:8]) + " ")
        paragraph.add_run(words[8] + " ").italic = True
        paragraph.add_run(" ".join(words[9:]))
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def timed(command):
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, body):
    request = urllib.request.Request(url, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.load(response)


def one_sentence_latency(http, count):
    latencies = []
    for _ in range(count):
        start = time.perf_counter()
        post(f"{http}/v1/translate", {"contents": ["Where is the nearest train station?"]})
        latencies.append(time.perf_counter() - start)
    return latencies


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--xlate", default=os.path.join(REPO, "build", "cli", "xlate"))
    parser.add_argument("--server", default=os.path.join(REPO, "build", "server", "xlate-server"))
    parser.add_argument("--model", default=os.path.join(REPO, "models", "en-de-general"))
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", default=os.path.join(REPO, "bench", "results",
                                                         "document_overhead.json"))
    args = parser.parse_args()
    texts = paragraphs(args.pages)
    work = tempfile.mkdtemp(prefix="xlate_document_overhead_")
    source_docx, source_text = (os.path.join(work, name) for name in ("manual.docx", "manual.txt"))
    data = make_docx(texts)
    with open(source_docx, "wb") as f:
        f.write(data)
    with open(source_text, "w", encoding="utf-8") as f:
        f.write("\n".join(texts) + "\n")
    common = [args.xlate, "translate", "--model_dir", args.model, f"--threads={args.threads}"]
    as_docx = common + ["--input", source_docx, "--output", os.path.join(work, "out.docx")]
    as_text = common + ["--input", source_text, "--output", os.path.join(work, "out.txt")]
    timed(as_text)  # warm-up: the model's pages in the cache
    pairs = []
    for _ in range(args.pairs):
        docx_seconds, text_seconds = timed(as_docx), timed(as_text)
        pairs.append({"docx_s": round(docx_seconds, 3), "text_s": round(text_seconds, 3),
                      "ratio": round(docx_seconds / text_seconds, 4)})
        print(pairs[-1], flush=True)

    http_port = free_port()
    server = subprocess.Popen([args.server, f"--model_dir={args.model}", "--host=127.0.0.1",
                               "--port=0", "--metrics_port=0", f"--http_port={http_port}",
                               f"--threads={args.threads}"],
                              stderr=subprocess.PIPE, text=True)
    try:
        for line in server.stderr:
            if re.search(r"metrics on port", line):
                break
        threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()
        http = f"http://127.0.0.1:{http_port}"
        one_sentence_latency(http, 5)  # warm-up
        idle = one_sentence_latency(http, 20)
        job = post(f"{http}/v1/documents", {"content": base64.b64encode(data).decode(),
                                            "fileName": "manual.docx"})["id"]

        def state():
            with urllib.request.urlopen(f"{http}/v1/documents/{job}", timeout=60) as response:
                return json.load(response)
        while state()["state"] == "QUEUED":
            time.sleep(0.05)
        during, progress = [], []
        while state()["state"] == "RUNNING" and len(during) < 20:
            during.extend(one_sentence_latency(http, 1))
            progress.append(state()["sentencesDone"])
        final = state()
        while final["state"] == "RUNNING":
            time.sleep(0.5)
            final = state()
    finally:
        server.terminate()
        server.wait(60)

    ratios = [pair["ratio"] for pair in pairs]
    result = {
        "source": {
            "doc": "docs/benchmarks.md#documents",
            "what": "issue 69: a file format's overhead over the same sentences as text, and a "
                    "one-sentence call's latency while a document job runs",
            "machine": "2-core AVX512_BF16 VM",
            "date": datetime.date.today().isoformat(),
            "command": "python3 bench/document_overhead.py --pages %d --pairs %d --threads %d"
                       % (args.pages, args.pairs, args.threads),
        },
        "paragraphs": len(texts),
        "sentences_per_paragraph": SENTENCES_PER_PARAGRAPH,
        "docx_bytes": len(data),
        "docx_vs_text": {"pairs": pairs, "median_ratio": statistics.median(ratios)},
        "one_sentence_latency_s": {
            "idle_median": round(statistics.median(idle), 4),
            "during_job_median": round(statistics.median(during), 4) if during else None,
            "during_job_calls": len(during),
            "ratio": round(statistics.median(during) / statistics.median(idle), 3)
                     if during else None,
            "job_sentences_done_while_measured": progress[-1] if progress else None,
            "job_sentences_total": final["sentencesTotal"],
            "job_state": final["state"],
        },
    }
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
