// Event-loop delay and throughput of one cleaning of a few hundred MB:
//   npx tsx apps/broker/test/compaction-bench.ts [MB]
// Writes keyed 1 KiB records (10% distinct keys) into 64 MiB segments, then
// cleans the log once with monitorEventLoopDelay running, while a 1 ms timer
// stands in for requests; prints p50/p99/max of the delay (and of 2 s idle before,
// the machine's own noise floor) and the MB/s cleaned.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { encodeRecordBatch } from '@tidelog/protocol'
import { PartitionLog } from '../src/log/index.js'
import { cleanLog, planCleaning } from '../src/log/compaction/clean-log.js'

const mb = Number(process.argv[2] ?? 300)
const dir = mkdtempSync(join(tmpdir(), 'tidelog-compaction-bench-'))
const log = PartitionLog.open({
  dir: join(dir, 'b-0'),
  topic: 'b',
  partition: 0,
  config: { cleanupCompact: true, cleanupDelete: false, minCleanableDirtyRatio: 0.01, segmentBytes: 64 * 1024 * 1024 },
  clean: true,
})
const value = Buffer.alloc(1024, 7)
const perBatch = 100
const batches = Math.ceil((mb * 1024 * 1024) / ((value.length + 20) * perBatch))
const keys = Math.max(1, Math.floor((batches * perBatch) / 10))
let n = 0
for (let b = 0; b < batches; b++) {
  const records = Array.from({ length: perBatch }, () => ({ key: `key-${(n++ * 7919) % keys}`, value }))
  log.append(encodeRecordBatch({ records, now: Date.now() }))
}
log.roll()
log.append(encodeRecordBatch({ records: [{ key: 'active', value }] }))
await log.flush()
const size = log.size

// The same measurement while idle first: on a shared machine the scheduler alone delays the loop.
const ticker = setInterval(() => {}, 1)
const idle = monitorEventLoopDelay({ resolution: 1 })
idle.enable()
await new Promise((r) => setTimeout(r, 2000))
idle.disable()
const h = monitorEventLoopDelay({ resolution: 1 })
h.enable()
const started = performance.now()
const r = await cleanLog(log, planCleaning(log, 0, Date.now()))
const ms = performance.now() - started
h.disable()
clearInterval(ticker)
const q = (p: number, m = h) => (m.percentile(p) / 1e6).toFixed(2)
console.log(
  JSON.stringify({
    logMiB: +(size / 1048576).toFixed(1),
    cleanedMiB: +((r?.bytesRead ?? 0) / 1048576).toFixed(1),
    writtenMiB: +((r?.bytesWritten ?? 0) / 1048576).toFixed(1),
    seconds: +(ms / 1000).toFixed(2),
    mibPerSecond: +(((r?.bytesRead ?? 0) / 1048576) / (ms / 1000)).toFixed(1),
    eventLoopDelayMs: { p50: +q(50), p99: +q(99), max: +(h.max / 1e6).toFixed(2) },
    idleEventLoopDelayMs: { p50: +q(50, idle), p99: +q(99, idle), max: +(idle.max / 1e6).toFixed(2) },
  }),
)
await log.close()
rmSync(dir, { recursive: true, force: true })
