/**
 * Compress throughput and ratio of the pure-JS zstd compressor on a realistic record-batch
 * body (1,000 records, 10-byte keys, 100-byte log-line values), next to node:zlib's gzip and
 * the repo's lz4 frame compressor (and node:zlib's zstd where this Node has it).
 *
 *   npx tsx packages/protocol/scripts/bench-zstd.ts [seconds per codec, default 1]
 *
 * Throughput is input bytes per second of CPU time (user + system), so other load on the
 * machine skews it less than wall time would.
 */
import * as zlib from 'node:zlib'
import { encodeRecordBatch, RECORD_BATCH_OVERHEAD } from '../src/records/index.js'
import { lz4FrameCompress } from '../src/records/codecs/lz4.js'
import { zstdCompress } from '../src/records/codecs/zstd-compress.js'

const seconds = Number(process.argv[2] ?? 1)

let seed = 12345
const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32
const pick = <T>(a: readonly T[]) => a[Math.floor(random() * a.length)]!
const WORDS = (
  'the a order payment user session checkout cart item product shipped delivered failed retry timeout request response ' +
  'service account login logout search page view click added removed price total discount coupon warehouse inventory ' +
  'stock update created deleted customer invoice refund status pending complete error warning latency region'
).split(' ')
const LEVELS = ['INFO', 'INFO', 'INFO', 'WARN', 'DEBUG', 'ERROR']

function value(i: number): string {
  const two = (n: number) => String(n).padStart(2, '0')
  let s = `2024-05-${two(1 + (i % 28))}T12:${two(i % 60)}:${two(Math.floor(random() * 60))}Z ${pick(LEVELS)} `
  s += `svc-${Math.floor(random() * 8)} user=${Math.floor(random() * 100_000)} `
  while (s.length < 100) s += pick(WORDS) + ' '
  return s.slice(0, 100)
}

const records = Array.from({ length: 1000 }, (_, i) => ({
  key: `user-${String(Math.floor(random() * 100_000)).padStart(5, '0')}`,
  value: value(i),
  timestamp: 1_700_000_000_000n + BigInt(i),
}))
const body = encodeRecordBatch({ records }).subarray(RECORD_BATCH_OVERHEAD)

function measure(name: string, compress: (d: Uint8Array) => Uint8Array): void {
  for (let i = 0; i < 50; i++) compress(body)
  const start = process.cpuUsage()
  let runs = 0
  let size = 0
  do {
    size = compress(body).length
    runs++
  } while (process.cpuUsage(start).user < seconds * 1e6)
  const used = process.cpuUsage(start)
  const mbps = (body.length * runs) / ((used.user + used.system) / 1e6) / 1e6
  console.log(
    `${name.padEnd(28)} ${mbps.toFixed(1).padStart(7)} MB/s   ratio ${((size / body.length) * 100).toFixed(1).padStart(5)}%   ${size} B`,
  )
}

console.log(`body: ${body.length} bytes (1,000 records), Node ${process.version}`)
for (const level of [1, 3, 4]) measure(`zstd (pure JS) level ${level}`, (d) => zstdCompress(d, level))
const native = zlib as { zstdCompressSync?: (d: Uint8Array) => Buffer }
if (native.zstdCompressSync !== undefined) measure('zstd (node:zlib)', (d) => native.zstdCompressSync!(d))
measure('gzip (node:zlib, level 6)', (d) => zlib.gzipSync(d))
measure('gzip (node:zlib, level 1)', (d) => zlib.gzipSync(d, { level: 1 }))
measure('lz4 (frame, pure JS)', lz4FrameCompress)
