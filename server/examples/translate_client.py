#!/usr/bin/env python3
"""A minimal xlate client to copy: translate sentences with xlate-server over gRPC.

    pip install grpcio grpcio-tools
    python3 server/examples/translate_client.py --target 127.0.0.1:50051 "A dog runs." "Two men talk."

It generates the Python stubs from proto/translator.proto on the fly (a real client would
generate them once with `python -m grpc_tools.protoc`), sends one request with all sentences
and prints one translation per line, in order. With --stream it calls TranslateStream instead
and shows each entry's settled words on stderr as they come.
"""
import argparse
import os
import sys
import tempfile

import grpc
from grpc_tools import protoc

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def compile_protos(*names):
    """Generates the Python stubs of proto/<name>.proto into a fresh folder on sys.path."""
    out = tempfile.mkdtemp(prefix="xlate_stubs_")
    if protoc.main(["protoc", f"-I{REPO}", f"--python_out={out}", f"--grpc_python_out={out}",
                    *(os.path.join(REPO, "proto", f"{name}.proto") for name in names)]) != 0:
        sys.exit(f"could not compile {', '.join(names)} in proto/")
    sys.path.insert(0, out)


def import_stubs():
    """xlate.v1.Translator's messages and stubs."""
    compile_protos("translator")
    from proto import translator_pb2, translator_pb2_grpc
    return translator_pb2, translator_pb2_grpc


def import_admin_stubs():
    """xlate.v1.ModelAdmin's messages and stubs (xlate-server --admin_address)."""
    compile_protos("model_admin")
    from proto import model_admin_pb2, model_admin_pb2_grpc
    return model_admin_pb2, model_admin_pb2_grpc


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sentences", nargs="+")
    parser.add_argument("--target", default="127.0.0.1:50051")
    parser.add_argument("--beam_size", type=int, default=4)
    parser.add_argument("--n_best", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=60, help="deadline in seconds")
    parser.add_argument("--stream", action="store_true",
                        help="TranslateStream: print partial translations to stderr as they grow")
    parser.add_argument("--alignment", action="store_true",
                        help="print each target piece and the source piece it attends to most "
                             "(last layer, heads averaged) after each translation")
    args = parser.parse_args()

    pb2, pb2_grpc = import_stubs()
    with grpc.insecure_channel(args.target) as channel:
        stub = pb2_grpc.TranslatorStub(channel)
        request = pb2.TranslateRequest(
            contents=args.sentences,
            options=pb2.DecodingOptions(beam_size=args.beam_size, n_best=args.n_best,
                                        return_scores=args.n_best > 1),
            alignment=pb2.AlignmentOptions() if args.alignment else None)
        try:
            if args.stream:
                for message in stub.TranslateStream(request, timeout=args.timeout):
                    if message.HasField("partial"):
                        print(f"[{message.partial.entry}] {message.partial.text}", file=sys.stderr)
                    else:
                        response = message.response
            else:
                response = stub.Translate(request, timeout=args.timeout)
        except grpc.RpcError as error:
            sys.exit(f"{error.code().name}: {error.details()}")
    for translation in response.translations:
        if args.n_best > 1:
            for hypothesis in translation.hypotheses:
                print(f"{hypothesis.score:.4f}\t{hypothesis.text}")
        else:
            print(translation.translated_text)
        for sentence in translation.alignments:
            for piece, row in zip(sentence.target_tokens, sentence.target):
                weights = list(row.source_weights)
                best = weights.index(max(weights))
                print(f"  {piece} -> {sentence.source_tokens[best]} ({weights[best]:.2f})")


if __name__ == "__main__":
    main()
