#!/usr/bin/env python3
"""Reloads a model of a running xlate-server without downtime, through xlate.v1.ModelAdmin.

    python3 server/examples/reload_model.py [--admin 127.0.0.1:50052] [--model NAME] [DIR]

The server must run with --admin_address (the address given here). Without DIR the model is
loaded again from its own directory; without --model, the server's only model. Prints the
model as it serves afterwards; a refused reload (the old model keeps serving) prints the
server's reason and exits 1. `kill -HUP <pid>` reloads every model the same way.
"""
import argparse
import sys

import grpc

from translate_client import import_admin_stubs


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", nargs="?", default="")
    parser.add_argument("--admin", default="127.0.0.1:50052", help="the server's --admin_address")
    parser.add_argument("--model", default="", help="the served model's name")
    parser.add_argument("--timeout", type=float, default=600, help="deadline in seconds")
    args = parser.parse_args()
    admin_pb2, admin_pb2_grpc = import_admin_stubs()
    stub = admin_pb2_grpc.ModelAdminStub(grpc.insecure_channel(args.admin))
    try:
        reply = stub.ReloadModel(admin_pb2.ReloadModelRequest(model=args.model,
                                                              model_dir=args.model_dir),
                                 timeout=args.timeout)
    except grpc.RpcError as error:
        sys.exit(f"{error.code().name}: {error.details()}")
    print(f'"{reply.model}" now serves {reply.model_dir} ({reply.source_language} to '
          f'{reply.target_language}), loaded and warmed up in {reply.load_seconds:.2f} s')


if __name__ == "__main__":
    main()
