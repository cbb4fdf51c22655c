// Event-loop delay, cleaner throughput and produce throughput beside the cleaner:
//   npx tsx apps/broker/test/compaction-bench.ts [MiB per log, default 100] [rounds, default 3]
// Each round has two windows with the same produce load on the event loop (appends of
// 10 x 1 KiB records to a log, one per turn of the loop, as requests arrive over
// sockets): one alone, then one while a dirty log (keyed 1 KiB records, 10% distinct
// keys, 64 MiB segments) is cleaned. Both windows record the event-loop delay with
// monitorEventLoopDelay, so the figures compare like with like on a shared machine,
// where the scheduler alone delays the loop. Medians over the rounds are printed last.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks'
import { encodeRecordBatch } from '@tidelog/protocol'
import { PartitionLog } from '../src/log/index.js'
import { cleanLog, planCleaning } from '../src/log/compaction/clean-log.js'

const mb = Number(process.argv[2] ?? 100)
const rounds = Number(process.argv[3] ?? 3)
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
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const produced = open('p', false)
/** Produces while go() holds; returns MiB/s and the event-loop delay over the window. */
async function window(go: () => boolean): Promise<{ mibps: number; delay: ReturnType<typeof ms> }> {
  const h = monitorEventLoopDelay({ resolution: 1 })
  h.enable()
  let bytes = 0
  const start = performance.now()
  while (go()) {
    const batch = encodeRecordBatch({ records: Array.from({ length: 10 }, (_, i) => ({ key: `p${i}`, value })) })
    produced.append(batch)
    bytes += batch.length
    await new Promise((res) => setImmediate(res))
  }
  h.disable()
  return { mibps: bytes / 1048576 / ((performance.now() - start) / 1000), delay: ms(h) }
}

const logs: PartitionLog[] = []
for (let i = 0; i < rounds; i++) logs.push(await dirtyLog(`d${i}`))
// First one log cleaned with nothing else running: the cleaner's own rate, and the share
// of that time the event loop was busy (event-loop utilization), which the machine's load
// does not inflate the way it inflates delays.
const lone = await dirtyLog('lone')
// A small pass first, so a worker thread (where the cleaner has one) is up before anything is timed.
const warm = open('warm', true)
warm.append(encodeRecordBatch({ records: [{ key: 'a', value }, { key: 'a', value }] }))
warm.roll()
warm.append(encodeRecordBatch({ records: [{ key: 'b', value }] }))
await cleanLog(warm, planCleaning(warm, 0, Date.now()))
logs.push(warm)
const loneBytes = lone.size
const elu0 = performance.eventLoopUtilization()
let t = performance.now()
await cleanLog(lone, planCleaning(lone, 0, Date.now()))
const loneSeconds = (performance.now() - t) / 1000
const elu = performance.eventLoopUtilization(elu0)
console.log(JSON.stringify({ alone: { cleanerMiBPerSecond: +(loneBytes / 1048576 / loneSeconds).toFixed(1), eventLoopUtilization: +elu.utilization.toFixed(3), eventLoopBusyMs: +elu.active.toFixed(0), seconds: +loneSeconds.toFixed(2) } }))
logs.push(lone)
const results = []
for (const log of logs.slice(0, rounds)) {
  const dirtyBytes = log.size
  const until = performance.now() + 2000
  const alone = await window(() => performance.now() < until)
  let cleaning = true
  t = performance.now()
  const during = window(() => cleaning)
  const r = await cleanLog(log, planCleaning(log, 0, Date.now()))
  const seconds = (performance.now() - t) / 1000
  cleaning = false
  const beside = await during
  results.push({
    dirtyMiB: +(dirtyBytes / 1048576).toFixed(1),
    cleanerMiBPerSecond: +(dirtyBytes / 1048576 / seconds).toFixed(1),
    readMiB: +((r?.bytesRead ?? 0) / 1048576).toFixed(1),
    writtenMiB: +((r?.bytesWritten ?? 0) / 1048576).toFixed(1),
    delayMs: { alone: alone.delay, cleaning: beside.delay },
    produceMiBPerSecond: { alone: +alone.mibps.toFixed(1), cleaning: +beside.mibps.toFixed(1) },
    produceRatio: +(beside.mibps / alone.mibps).toFixed(2),
  })
  console.log(JSON.stringify(results[results.length - 1]))
}
console.log(
  JSON.stringify({
    median: {
      cleanerMiBPerSecond: median(results.map((r) => r.cleanerMiBPerSecond)),
      delayP99Ms: { alone: median(results.map((r) => r.delayMs.alone.p99)), cleaning: median(results.map((r) => r.delayMs.cleaning.p99)) },
      delayMaxMs: { alone: median(results.map((r) => r.delayMs.alone.max)), cleaning: median(results.map((r) => r.delayMs.cleaning.max)) },
      produceRatio: median(results.map((r) => r.produceRatio)),
    },
  }),
)
for (const l of [...logs, produced]) await l.close()
rmSync(dir, { recursive: true, force: true })
