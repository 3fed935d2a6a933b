#!/usr/bin/env bash
# The CPU image, proven without a Docker daemon: its root filesystem is built from the inputs the
# Dockerfile uses -- debootstrap of the Dockerfile's Debian release, the runtime packages of
# scripts/runtime-packages.txt, the tree that scripts/build_install.sh installs (a CPU-only
# build) -- then xlate-server runs inside it (chroot) on the shipped model, answers its health
# check and translates for a Python gRPC client outside. A runtime library that the list misses
# fails the test (it names the library).
#   usage: image_rootfs_test.sh WORK_DIR      (root; exit 77 = skipped: not root or no network)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
[[ $# -ge 1 ]] || { echo "usage: image_rootfs_test.sh WORK_DIR" >&2; exit 2; }
work=$1
rootfs=$work/rootfs
mkdir -p "$work"
if [[ $(id -u) -ne 0 ]]; then echo "skipped: needs root (debootstrap, chroot)"; exit 77; fi

release=$(sed -n 's/^ARG DEBIAN_RELEASE=//p' "$repo/Dockerfile")
mirror=${XLATE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
[[ -n $release ]] || { echo "FAIL: no ARG DEBIAN_RELEASE= in the Dockerfile"; exit 1; }
packages=$(grep -v '^#' "$repo/scripts/runtime-packages.txt" | tr -s '[:space:]' ' ')

# The image's root filesystem: the Dockerfile's FROM debian:$release-slim, then its RUN apt-get
# of the runtime packages. Made once per machine for each release, mirror and package list
# (tests/machine_cache_dir.sh; a new list makes a new one), then copied afresh for each run.
cache=$(bash "$repo/tests/machine_cache_dir.sh")
key=$(printf '%s\n' "$release" "$mirror" "$packages" | sha256sum | cut -c1-16)
base=$cache/image-rootfs-$release-$key
if [[ ! -x $base/usr/bin/apt-get ]]; then
  staging=$base.partial.$$
  rm -rf "$staging"
  if ! debootstrap --variant=minbase "$release" "$staging" "$mirror" > "$work/debootstrap.log" 2>&1
  then
    rm -rf "$staging"
    if grep -q "Failed getting release file\|Couldn't download" "$work/debootstrap.log"; then
      echo "skipped: the Debian mirror $mirror is not reachable"; exit 77
    fi
    tail -20 "$work/debootstrap.log"; exit 1
  fi
  cp /etc/resolv.conf "$staging/etc/resolv.conf"
  # shellcheck disable=SC2086  # one word per package
  chroot "$staging" /usr/bin/env DEBIAN_FRONTEND=noninteractive bash -c \
    "apt-get update -qq && apt-get install -y -qq --no-install-recommends $packages && apt-get clean" \
    > "$work/apt.log" 2>&1 || { tail -20 "$work/apt.log"; rm -rf "$staging"; exit 1; }
  mv -T "$staging" "$base" 2> /dev/null || rm -rf "$staging"  # another run made it first
fi
rm -rf "$rootfs"
cp -a "$base" "$rootfs"

# The Dockerfile's build stage: the shipped binaries and model, installed under /opt/xlate.
rm -rf "$rootfs/opt/xlate"
bash "$repo/scripts/build_install.sh" "$work/build" "$rootfs/opt/xlate" -DXLATE_CUDA=OFF \
  > "$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }

# What Docker gives every container and the binaries read (/proc/self/exe finds the
# SentencePiece module beside bin/, /proc/stat the CPU share).
if ! mount -t proc proc "$rootfs/proc"; then
  echo "skipped: cannot mount /proc in the root filesystem (a container without CAP_SYS_ADMIN)"
  exit 77
fi
trap 'umount "$rootfs/proc"' EXIT

failures=0
missing=$(chroot "$rootfs" /usr/bin/env bash -c \
  'for f in /opt/xlate/bin/* /opt/xlate/lib/*.so; do ldd "$f" | sed "s|^|$f: |"; done' \
  | grep "not found" || true)
if [[ -n $missing ]]; then
  echo "FAIL: runtime libraries that scripts/runtime-packages.txt does not bring:"
  echo "$missing"
  failures=$((failures + 1))
fi

# The server in the image, as the Dockerfile's ENTRYPOINT and CMD start it (ports picked free).
# Its log exists before the loop below reads it: the background job opens it when it starts,
# and under load the first read once came first (sed's error then ended the script, set -e).
: > "$work/server.log"
chroot "$rootfs" /opt/xlate/bin/xlate-server \
  --model_dir=/opt/xlate/share/xlate/models/en-de-general --host=127.0.0.1 --port=0 \
  --metrics_port=0 > "$work/server.log" 2>&1 &
server=$!
trap 'kill $server 2> /dev/null || true; umount "$rootfs/proc"' EXIT
port=
for _ in $(seq 600); do
  port=$(sed -n 's/.*on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$work/server.log")
  [[ -n $port ]] && break
  kill -0 $server 2> /dev/null || break
  sleep 0.1
done
if [[ -z $port ]]; then
  echo "FAIL: xlate-server did not start in the image:"; cat "$work/server.log"; exit 1
fi
if health=$(chroot "$rootfs" /opt/xlate/bin/xlate-health --target=127.0.0.1:$port) \
    && [[ $health == SERVING ]]; then
  echo "ok: xlate-health in the image says SERVING"
else
  echo "FAIL: xlate-health in the image: $health"; failures=$((failures + 1))
fi
if translation=$(python3 "$repo/server/examples/translate_client.py" \
    --target "127.0.0.1:$port" "A dog runs in the park.") && [[ $translation == *Hund* ]]; then
  echo "ok: the image's server translates: $translation"
else
  echo "FAIL: no German from the image's server: $translation"; failures=$((failures + 1))
fi
kill -TERM $server
wait $server || { echo "FAIL: the server did not exit 0 on SIGTERM"; failures=$((failures + 1)); }
umount "$rootfs/proc"
trap - EXIT
echo "$(du -sh "$rootfs" | cut -f1) root filesystem, $failures failed"
test $failures -eq 0
