#!/usr/bin/env bash
# Regenerates compressed-fixtures.json with the reference CLIs (Debian: lz4, zstd, gzip).
# Not run by the tests; the JSON is committed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
node -e '
const parts = []
for (let i = 0; i < 3000; i++) parts.push(`record-${i % 977} value ${(i * 7919) % 10007} ${"x".repeat(i % 13)}\n`)
process.stdout.write(Buffer.from(parts.join("")))' > in.bin
lz4 -q -c -B4 --no-frame-crc in.bin > lz4-kafka-like.lz4
lz4 -q -c in.bin > lz4-default.lz4
lz4 -q -c -B4 -BD in.bin > lz4-dependent.lz4
lz4 -q -c -B5 --content-size -BX in.bin > lz4-size-blockcrc.lz4
zstd -q -c -3 in.bin > zstd-default.zst
zstd -q -c -3 < in.bin > zstd-stream.zst
zstd -q -c -19 --no-check in.bin > zstd-19.zst
head -c 50000 in.bin | zstd -q -c > a.zst; tail -c +50001 in.bin | zstd -q -c > b.zst; cat a.zst b.zst > zstd-two-frames.zst
gzip -c -9 in.bin > gzip-9.gz
head -c 50000 in.bin | gzip -c > a.gz; tail -c +50001 in.bin | gzip -c > b.gz; cat a.gz b.gz > gzip-two-members.gz
python3 - "$here/compressed-fixtures.json" <<'PY'
import json, sys
cmds = {
 'lz4-kafka-like.lz4': 'lz4 -B4 --no-frame-crc (64 KiB independent blocks, no content checksum: the shape Kafka writes)',
 'lz4-default.lz4': 'lz4 (4 MiB blocks, content checksum)',
 'lz4-dependent.lz4': 'lz4 -B4 -BD (linked blocks)',
 'lz4-size-blockcrc.lz4': 'lz4 -B5 --content-size -BX (content size, block checksums)',
 'zstd-default.zst': 'zstd -3 (file input: content size in the frame header, checksum)',
 'zstd-stream.zst': 'cat | zstd -3 (stdin: no content size, as streaming producers write)',
 'zstd-19.zst': 'zstd -19 --no-check',
 'zstd-two-frames.zst': 'two zstd frames concatenated (first 50000 bytes, then the rest)',
 'gzip-9.gz': 'gzip -9',
 'gzip-two-members.gz': 'two gzip members concatenated (first 50000 bytes, then the rest)',
}
fx = [{'name': n, 'command': c, 'hex': open(n, 'rb').read().hex()} for n, c in cmds.items()]
doc = {'note': 'Compressed with the reference command-line tools on Debian 12 (lz4 1.9.4, zstd 1.5.4, gzip 1.12) from the input that fixtureInput() in compression.test.ts rebuilds. Regenerate with test/golden-records/make-compressed-fixtures.sh.', 'fixtures': fx}
json.dump(doc, open(sys.argv[1], 'w'), indent=1)
PY
