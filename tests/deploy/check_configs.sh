#!/usr/bin/env bash
# Lints the deployment files with their ecosystems' own validators: hadolint (Dockerfile),
# kubernetes-validate (deploy/kubernetes against the Kubernetes schemas, strict: an unknown field
# fails), the Compose Specification's JSON schema (deploy/compose*.yaml; the schema as
# docker-compose 1.29.2 ships it), promtool (Prometheus config and rules).
#   usage: check_configs.sh WORK_DIR
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
[[ $# -ge 1 ]] || { echo "usage: check_configs.sh WORK_DIR" >&2; exit 2; }
work=$1
mkdir -p "$work"
# The validators that scripts/setup.sh installs with the python3 on PATH.
scripts=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
failures=0 passes=0
check() {  # check NAME COMMAND...
  local name=$1; shift
  if "$@" > "$work/out.txt" 2>&1; then
    passes=$((passes + 1))
  else
    echo "FAIL: $name"; cat "$work/out.txt"; failures=$((failures + 1))
  fi
}

check "hadolint: Dockerfile" "$scripts/hadolint" "$repo/Dockerfile"
check "kubernetes-validate: deploy/kubernetes (Kubernetes 1.30)" \
  "$scripts/kubernetes-validate" --strict --quiet -k 1.30.0 "$repo"/deploy/kubernetes/*.yaml
check "promtool: prometheus.yml" promtool check config "$repo/deploy/prometheus/prometheus.yml"
check "promtool: rules.yml" promtool check rules "$repo/deploy/prometheus/rules.yml"

schema=$work/compose_spec.json
if [[ ! -s $schema ]]; then
  python3 -m pip download -q --no-deps --disable-pip-version-check -d "$work/wheel" \
    docker-compose==1.29.2 > "$work/pip.txt" 2>&1 || { cat "$work/pip.txt"; exit 1; }
  python3 - "$work/wheel" "$schema" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/docker_compose-*.whl")[0]
with zipfile.ZipFile(wheel) as archive, open(sys.argv[2], "wb") as out:
    out.write(archive.read("compose/config/compose_spec.json"))
PY
fi
for compose in "$repo"/deploy/compose*.yaml; do
  check "compose schema: $(basename "$compose")" python3 - "$schema" "$compose" <<'PY'
import json, sys
import jsonschema, yaml
with open(sys.argv[1]) as f:
    schema = json.load(f)
with open(sys.argv[2]) as f:
    document = yaml.safe_load(f)
errors = list(jsonschema.Draft7Validator(schema).iter_errors(document))
for error in errors:
    print(f"{sys.argv[2]}: {'/'.join(map(str, error.path))}: {error.message}")
sys.exit(1 if errors else 0)
PY
done
# The compose files and manifests agree with the image: its ports, user and health check.
check "compose and manifests use the Dockerfile's ports" python3 - "$repo" <<'PY'
import glob, re, sys, yaml
repo = sys.argv[1]
dockerfile = open(f"{repo}/Dockerfile").read()
ports = set(re.search(r"^EXPOSE (.*)$", dockerfile, re.M)[1].split())
for path in glob.glob(f"{repo}/deploy/kubernetes/deployment*.yaml"):
    spec = yaml.safe_load(open(path))["spec"]["template"]["spec"]
    declared = {str(p["containerPort"]) for c in spec["containers"] for p in c["ports"]}
    assert declared == ports, (path, declared, ports)
    assert spec["terminationGracePeriodSeconds"] > 30, path  # longer than the server's drain
compose = yaml.safe_load(open(f"{repo}/deploy/compose.yaml"))
published = {p.split(":")[1] for p in compose["services"]["xlate"]["ports"]}
assert published == ports, (published, ports)
PY

echo "$passes passed, $failures failed"
test "$failures" -eq 0
