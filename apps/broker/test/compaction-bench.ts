// Event-loop delay, cleaner throughput and produce throughput beside the cleaner:
//   npx tsx apps/broker/test/compaction-bench.ts [MB per log, default 200]
// Two logs of keyed 1 KiB records (10% distinct keys) in 64 MiB segments. The first is
// cleaned alone with monitorEventLoopDelay running while a 1 ms timer stands in for
// requests (and the same is measured idle first: on a shared machine the scheduler alone
// delays the loop). The second is cleaned while a third log takes appends, whose rate is
// compared with the rate of the same appends alone.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks'
import { encodeRecordBatch } from '@tidelog/protocol'
import { PartitionLog } from '../src/log/index.js'
import { cleanLog, planCleaning } from '../src/log/compaction/clean-log.js'

const mb = Number(process.argv[2] ?? 200)
const dir = mkdtempSync(join(tmpdir(), 'tidelog-compaction-bench-'))
const value = Buffer.alloc(1024, 7)
const open = (name: string, compact: boolean) =>
  PartitionLog.open({ dir: join(dir, `${name}-0`), topic: name, partition: 0, config: { cleanupCompact: compact, cleanupDelete: !compact, minCleanableDirtyRatio: 0.01, segmentBytes: 64 * 1024 * 1024 }, clean: true })

async function dirtyLog(name: string): Promise<PartitionLog> {
  const log = open(name, true)
  const perBatch = 100
  const batches = Math.ceil((mb * 1024 * 1024) / ((value.length + 20) * perBatch))
  const keys = Math.max(1, Math.floor((batches * perBatch) / 10))
  let n = 0
  for (let b = 0; b < batches; b++) {
    log.append(encodeRecordBatch({ records: Array.from({ length: perBatch }, () => ({ key: `key-${(n++ * 7919) % keys}`, value })), now: Date.now() }))
  }
  log.roll()
  log.append(encodeRecordBatch({ records: [{ key: 'active', value }] }))
  await log.flush()
  return log
}

const ms = (h: IntervalHistogram) => ({ p50: +(h.percentile(50) / 1e6).toFixed(2), p99: +(h.percentile(99) / 1e6).toFixed(2), max: +(h.max / 1e6).toFixed(2) })
const ticker = setInterval(() => {}, 1)

const a = await dirtyLog('a')
const dirtyBytes = a.size
const idle = monitorEventLoopDelay({ resolution: 1 })
idle.enable()
await new Promise((r) => setTimeout(r, 2000))
idle.disable()
const h = monitorEventLoopDelay({ resolution: 1 })
h.enable()
let t0 = performance.now()
const r = await cleanLog(a, planCleaning(a, 0, Date.now()))
const seconds = (performance.now() - t0) / 1000
h.disable()

const produced = open('p', false)
const produceWhile = async (go: () => boolean): Promise<number> => {
  let bytes = 0
  const start = performance.now()
  while (go()) {
    const batch = encodeRecordBatch({ records: Array.from({ length: 10 }, (_, i) => ({ key: `p${i}`, value })) })
    produced.append(batch)
    bytes += batch.length
    // One produce request per turn of the loop, as requests arrive over sockets.
    await new Promise((res) => setImmediate(res))
  }
  return bytes / 1048576 / ((performance.now() - start) / 1000)
}
const b = await dirtyLog('b')
const stopAt = performance.now() + 2000
const alone = await produceWhile(() => performance.now() < stopAt)
let cleaning = true
t0 = performance.now()
const during = produceWhile(() => cleaning)
await cleanLog(b, planCleaning(b, 0, Date.now()))
cleaning = false
clearInterval(ticker)

console.log(
  JSON.stringify({
    logMiB: +(dirtyBytes / 1048576).toFixed(1),
    cleaner: {
      dirtyMiBPerSecond: +(dirtyBytes / 1048576 / seconds).toFixed(1), readMiB: +((r?.bytesRead ?? 0) / 1048576).toFixed(1), writtenMiB: +((r?.bytesWritten ?? 0) / 1048576).toFixed(1), seconds: +seconds.toFixed(2), readMiBPerSecond: +((r?.bytesRead ?? 0) / 1048576 / seconds).toFixed(1) },
    eventLoopDelayMs: { cleaning: ms(h), idle: ms(idle) },
    produceMiBPerSecond: { alone: +alone.toFixed(1), duringCleaning: +(await during).toFixed(1) },
  }),
)
for (const l of [a, b, produced]) await l.close()
rmSync(dir, { recursive: true, force: true })
