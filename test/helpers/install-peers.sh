#!/usr/bin/env bash
# Installs the interop peers that come from Debian when they are missing:
# kcat (librdkafka), python3-kafka (kafka-python), python3-confluent-kafka, the
# zstd and lz4 CLIs (the reference codecs our frames are checked against) and unzip
# (reads the version file of the Kafka jars a test ran, for the peer record) and
# chromium (the headless browser test/interop/console-browser.test.ts drives) and zsh (the
# CLI's zsh completion is run by zsh itself in packages/cli/test/groups-cluster.test.ts).
# The Python modules belong to /usr/bin/python3 (the first python3 on PATH may be
# another one). Apache Kafka itself comes from Maven Central (test/helpers/kafka.ts).
# Under CI=true a peer that cannot be installed fails the run; elsewhere it warns.
set -uo pipefail

missing=()
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
/usr/bin/python3 -c 'import kafka' >/dev/null 2>&1 || missing+=(python3-kafka)
/usr/bin/python3 -c 'import confluent_kafka' >/dev/null 2>&1 || missing+=(python3-confluent-kafka)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
command -v zstd >/dev/null 2>&1 || missing+=(zstd)
command -v lz4 >/dev/null 2>&1 || missing+=(lz4)
command -v unzip >/dev/null 2>&1 || missing+=(unzip)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v zsh >/dev/null 2>&1 || missing+=(zsh)

if [ ${#missing[@]} -eq 0 ]; then
  echo "interop peers present: kcat, python3-kafka, python3-confluent-kafka, mvn, java, zstd, lz4, unzip, chromium, zsh"
  exit 0
fi

echo "installing interop peers: ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null; }; then
  if [ "${CI:-}" = "true" ]; then
    echo "could not install interop peers: ${missing[*]}" >&2
    exit 1
  fi
  echo "warning: could not install ${missing[*]}; tests that need them will be skipped (CI=true makes this a failure)" >&2
fi
exit 0
