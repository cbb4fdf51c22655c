// A client child process: `node --import tsx child.ts '<job json>'`. Runs one job with one
// client and prints `RESULT <json>` (or `ERROR <message>`) as its last line.
import { SLOW_PARTITION, type ClientAdapter, type ProducerAdapter, type Rec } from './adapter.js'
import { makeRecords } from './records.js'
import {
  KEY_BYTES,
  VALUE_BYTES,
  type ConsumeJob,
  type ConsumeResult,
  type CopyJob,
  type CopyResult,
  type Job,
  type JobResult,
  type LatencyJob,
  type LatencyResult,
  type ProduceJob,
  type ProduceResult,
  type RoundTripJob,
} from './jobs.js'

/** The package directory of a peer installed outside the workspace (runtimes.ts sets it). */
function peerDir(): string {
  const dir = process.env.BENCH_PEER_DIR
  if (dir === undefined || dir === '') throw new Error('BENCH_PEER_DIR is not set: this client runs from the bench cache (runtimes.ts)')
  return dir
}

async function load(client: Job['client']): Promise<ClientAdapter> {
  // Only the client under test is loaded into this process.
  switch (client) {
    case 'tidelog':
    case 'tidelog-node22':
      return (await import('./tidelog.js')).tidelog
    case 'kafkajs':
      return (await import('./kafkajs.js')).kafkajs
    case 'platformatic':
      return (await import('./platformatic.js')).platformatic
    case 'tidelog-kafkajs':
      return (await import('./tidelog-kafkajs.js')).tidelogKafkajs
    case 'platformatic-2':
      return (await import('./platformatic.js')).platformaticFrom(peerDir())
    case 'confluent':
      return (await import('./confluent.js')).confluentFrom(peerDir())
  }
}

/** Sends every chunk, keeping at most `window` unacknowledged. */
function pump(chunks: unknown[], window: number, send: (c: unknown) => Promise<unknown>): Promise<void> {
  return new Promise((resolve, reject) => {
    let next = 0
    let inFlight = 0
    let done = 0
    if (chunks.length === 0) return resolve()
    const launch = () => {
      while (inFlight < window && next < chunks.length) {
        inFlight++
        send(chunks[next++]).then(() => {
          inFlight--
          if (++done === chunks.length) resolve()
          else launch()
        }, reject)
      }
    }
    launch()
  })
}

/**
 * pump() in transactions: begin, send chunks (at most `window` unacknowledged) until
 * `durationMs` has passed, wait for them, commit; again until every chunk is sent.
 * ProducerPerformance's --transaction-duration-ms loop (its commit flushes first).
 */
async function pumpInTransactions(chunks: unknown[], window: number, p: ProducerAdapter, durationMs: number): Promise<number> {
  let next = 0
  let transactions = 0
  while (next < chunks.length) {
    await p.begin!()
    const start = performance.now()
    const inFlight = new Set<Promise<unknown>>()
    while (next < chunks.length && performance.now() - start < durationMs) {
      const sent: Promise<unknown> = p.send(chunks[next++]).finally(() => inFlight.delete(sent))
      inFlight.add(sent)
      if (inFlight.size >= window) await Promise.race(inFlight)
    }
    await Promise.all(inFlight)
    await p.commit!()
    transactions++
  }
  return transactions
}

function chunked(p: { prepare(r: Rec[]): unknown }, recs: Rec[], from: number, to: number, size: number): unknown[] {
  const out: unknown[] = []
  for (let i = from; i < to; i += size) out.push(p.prepare(recs.slice(i, Math.min(to, i + size))))
  return out
}

async function produce(c: ClientAdapter, job: ProduceJob): Promise<ProduceResult> {
  const valueBytes = job.valueBytes ?? VALUE_BYTES
  const recs = makeRecords(job.warmupRecords + job.records, 1, valueBytes)
  const txn = job.transaction
  if (txn !== undefined && c.transactionalProducer === undefined) throw new Error(`${job.client}: no transactional producer in its adapter`)
  const p = txn === undefined ? await c.producer(job.bootstrap, job.topic, job.settings) : await c.transactionalProducer!(job.bootstrap, job.topic, job.settings, txn.transactionalId)
  try {
    const warm = chunked(p, recs, 0, job.warmupRecords, job.chunk)
    const main = chunked(p, recs, job.warmupRecords, recs.length, job.chunk)
    const window = Math.min(job.window, p.maxConcurrentSends ?? job.window)
    const run = (chunks: unknown[]) => (txn === undefined ? pump(chunks, window, (x) => p.send(x)) : pumpInTransactions(chunks, window, p, txn.durationMs))
    await run(warm)
    const t0 = performance.now()
    await run(main)
    const t1 = performance.now()
    const epoch = (t: number) => performance.timeOrigin + t
    return { records: job.records, bytes: job.records * (KEY_BYTES + valueBytes), ms: t1 - t0, startedAt: epoch(t0), endedAt: epoch(t1) }
  } finally {
    await p.close()
  }
}

/** Resolves when `done()` says so; fails when nothing moved for `stallMs`. */
function until(done: () => boolean, progress: () => number, stallMs: number, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let last = progress()
    let lastAt = performance.now()
    const timer = setInterval(() => {
      if (done()) {
        clearInterval(timer)
        return resolve()
      }
      const now = performance.now()
      const p = progress()
      if (p !== last) {
        last = p
        lastAt = now
      } else if (now - lastAt > stallMs) {
        clearInterval(timer)
        reject(new Error(`${what}: no progress for ${stallMs} ms at ${p}`))
      }
    }, 2)
  })
}

/** Reads `records` records of `job.topic` in `groupId`; first record to last, and creation to last. */
async function consumeN(c: ClientAdapter, job: ConsumeJob, groupId: string, records: number): Promise<ConsumeResult> {
  const t0 = performance.now()
  let n = 0
  let first = 0
  let last = 0
  let bytes = 0
  // C1.slow: only the partitions besides the slow one count (job.records is what they hold).
  const skip = job.style === 'each6' || job.style === 'slow6' ? SLOW_PARTITION : -1
  const cons = await c.consumer(
    job.bootstrap,
    job.topic,
    groupId,
    (v, partition) => {
      if (partition === skip) return
      if (n++ === 0) first = performance.now()
      bytes += v.length
      if (n === records) last = performance.now()
    },
    job.style,
  )
  try {
    await until(() => n >= records, () => n, 30_000, `consumed ${n} of ${records}`)
  } finally {
    await cons.close()
  }
  const size = job.valueBytes ?? VALUE_BYTES
  if (bytes < records * size) throw new Error(`values shorter than ${size} bytes`)
  return { records, ms: last - first, totalMs: last - t0 }
}

async function consume(c: ClientAdapter, job: ConsumeJob): Promise<ConsumeResult> {
  // The uncounted warm-up: the same client and mode in a group of its own (JIT, connections).
  if ((job.warmupRecords ?? 0) > 0) await consumeN(c, job, `${job.groupId}-warmup`, job.warmupRecords!)
  return consumeN(c, job, job.groupId, job.records)
}

async function copy(c: ClientAdapter, job: CopyJob): Promise<CopyResult> {
  if (c.copier === undefined) throw new Error(`${job.client}: no copier in its adapter`)
  let t0 = 0
  let t1 = 0
  let copied = 0
  let transactions = 0
  const copier = await c.copier(
    { bootstrap: job.bootstrap, input: job.topic, output: job.output, groupId: job.groupId, transactionalId: job.transactionalId, txnSize: job.txnSize, records: job.records, producerDefaults: job.producerDefaults },
    {
      started: () => void (t0 = performance.now()),
      committed: (n) => {
        copied += n
        transactions++
        if (copied >= job.records && t1 === 0) t1 = performance.now()
      },
    },
  )
  try {
    await until(() => copied >= job.records, () => copied, 30_000, `copied ${copied} of ${job.records}`)
  } finally {
    await copier.close()
  }
  if (copied !== job.records) throw new Error(`copied ${copied} records, the input has ${job.records}`)
  return { records: copied, transactions, ms: t1 - t0 }
}

const PROBE = 0xffffffff

function percentiles(lat: Float64Array, lost: number): LatencyResult {
  lat.sort()
  const at = (q: number) => lat[Math.min(lat.length - 1, Math.max(0, Math.ceil(q * lat.length) - 1))]!
  return { samples: lat.length, lost, p50: at(0.5), p99: at(0.99), p999: at(0.999), max: lat[lat.length - 1]! }
}

/** Starts a consumer and waits until it receives a probe record: joined, positioned, fetching. */
async function readyConsumer(
  c: ClientAdapter,
  job: LatencyJob | RoundTripJob,
  send: (recs: Rec[]) => Promise<unknown>,
  onIndex: (i: number, now: number) => void,
) {
  let ready = false
  const cons = await c.consumer(job.bootstrap, job.topic, job.groupId, (v) => {
    const now = performance.now()
    const i = v.readUInt32BE(0)
    if (i === PROBE) ready = true
    else onIndex(i, now)
  })
  const probe = makeRecords(1)[0]!
  probe.value.writeUInt32BE(PROBE, 0)
  const deadline = performance.now() + 60_000
  while (!ready) {
    if (performance.now() > deadline) throw new Error('the consumer received nothing for 60 s')
    await send([probe])
    await new Promise((r) => setTimeout(r, 100))
  }
  return cons
}

async function latency(c: ClientAdapter, job: LatencyJob): Promise<LatencyResult> {
  const p = await c.producer(job.bootstrap, job.topic, job.settings)
  const total = Math.round(job.rate * (job.warmupSeconds + job.seconds))
  const skip = Math.round(job.rate * job.warmupSeconds)
  const recs = makeRecords(total)
  const lat = new Float64Array(total - skip).fill(-1)
  let received = 0
  let t0 = 0
  const interval = 1000 / job.rate
  const failures: unknown[] = []
  const send = (batch: Rec[]) => p.send(p.prepare(batch))
  const cons = await readyConsumer(c, job, send, (i, now) => {
    if (i >= skip && i < total && lat[i - skip] === -1) {
      lat[i - skip] = now - (t0 + i * interval)
      received++
    }
  })
  try {
    t0 = performance.now()
    let next = 0
    await new Promise<void>((resolve) => {
      const tick = () => {
        const due = Math.min(total, Math.floor((performance.now() - t0) / interval) + 1)
        if (due > next) {
          send(recs.slice(next, due)).catch((e: unknown) => failures.push(e))
          next = due
        }
        if (next >= total) resolve()
        else setTimeout(tick, 1)
      }
      tick()
    })
    await until(() => received >= total - skip || failures.length > 0, () => received, 5_000, 'latency run').catch(() => undefined)
    if (failures.length > 0) throw failures[0]
  } finally {
    await cons.close()
    await p.close()
  }
  const got = lat.filter((x) => x >= 0)
  if (got.length === 0) throw new Error('no record arrived')
  return percentiles(got, total - skip - got.length)
}

async function roundtrip(c: ClientAdapter, job: RoundTripJob): Promise<LatencyResult> {
  const p = await c.producer(job.bootstrap, job.topic, job.settings)
  const total = job.warmupRecords + job.records
  const recs = makeRecords(total)
  const lat = new Float64Array(job.records)
  let waiting = -1
  let arrived: (() => void) | undefined
  const send = (batch: Rec[]) => p.send(p.prepare(batch))
  const cons = await readyConsumer(c, job, send, (i) => {
    if (i === waiting) arrived?.()
  })
  try {
    for (let i = 0; i < total; i++) {
      const t = performance.now()
      waiting = i
      const got = new Promise<void>((resolve, reject) => {
        arrived = resolve
        setTimeout(() => reject(new Error(`record ${i} did not arrive within 10 s`)), 10_000).unref()
      })
      await Promise.all([send([recs[i]!]), got])
      if (i >= job.warmupRecords) lat[i - job.warmupRecords] = performance.now() - t
    }
  } finally {
    await cons.close()
    await p.close()
  }
  return percentiles(lat, 0)
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? '') as Job
  const client = await load(job.client)
  let result: JobResult
  switch (job.kind) {
    case 'produce':
      result = await produce(client, job)
      break
    case 'consume':
      result = await consume(client, job)
      break
    case 'latency':
      result = await latency(client, job)
      break
    case 'roundtrip':
      result = await roundtrip(client, job)
      break
    case 'copy':
      result = await copy(client, job)
      break
  }
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`)
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stdout.write(`ERROR ${(e instanceof Error ? e.message : String(e)).split('\n')[0]}\n`)
    process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`)
    process.exit(1)
  },
)
