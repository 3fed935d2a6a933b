#!/usr/bin/env bash
# The main job: set up, build and run xlate-server on the default model (CPU when there is no
# GPU): gRPC on port 50051, HTTP/JSON and the page to try it on 8080, Prometheus metrics on 9464.
# Ctrl-C or SIGTERM stops it gracefully.
#   usage: scripts/run_server.sh [MODEL_DIR [xlate-server flags...]]
# Without MODEL_DIR it serves scripts/default_model.sh's model (see there).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
model_dir=${1:-$(bash scripts/default_model.sh)}
shift || true
echo "try: python3 server/examples/translate_client.py --target 127.0.0.1:50051 'A dog runs.'" >&2
echo "or open http://127.0.0.1:8080/ in a browser" >&2
exec build/server/xlate-server --model_dir "$model_dir" --port 50051 --http_port 8080 \
  --metrics_port 9464 "$@"
