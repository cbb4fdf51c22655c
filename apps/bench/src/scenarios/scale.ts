// The broker's own limits (issue 17), tidelog broker against Apache Kafka:
//   B1 partitions: 1 / 100 / 1,000 / 10,000 partitions, produce and consume throughput with
//      the tidelog client, broker RSS per idle partition, and (tidelog) restart time with that
//      much metadata and data;
//   B3 several producers: 4 producer processes (tidelog client) into one broker, MB/s against
//      the loopback and disk limits (X1) measured in the same run;
//   B2, B5 and B6 (idle connections, latency at a fixed rate, a consumer that does not read) are in scale-load.ts;
//   B4 large records: 100 KiB and 1 MB values, produce (tidelog client and Java) and consume
//      (tidelog client) MB/s.
// Many partitions need many file descriptors: index.ts raises `ulimit -n` for this suite.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { producerPerformance } from '../clients/java.js'
import { KEY_BYTES, type ConsumeResult, type ProduceResult, type ProducerSettings } from '../clients/jobs.js'
import { runChild } from '../clients/run-child.js'
import { waitForApiVersions } from '../env/api-versions.js'
import { createTopic, deleteTopic, spawnTidelogBroker, stopProcess, type BrokerHandle } from '../env/brokers.js'
import { rssMiB } from '../env/proc.js'
import { interleave, type Metrics } from '../matrix.js'
import { entryOf, makeRow } from '../rows.js'
import type { RunContext, ScenarioResult, Suite } from '../types.js'
import { BASE, CHUNK, WINDOW, matrix, rowsOf, topicName, wants } from './clients.js'
import { loopbackTcp, sequentialDisk } from './limits.js'
import { b2, b5, b6 } from './scale-load.js'

/** This process's soft open-file limit, which the brokers and clients inherit. */
function openFileLimit(): string {
  return spawnSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).stdout.trim()
}

/** Waits until the broker's RSS stops growing (settled after a topic creation), up to `maxMs`. */
async function settledRss(pid: number, maxMs: number): Promise<number> {
  let last = rssMiB(pid)
  const end = performance.now() + maxMs
  while (performance.now() < end) {
    await new Promise((r) => setTimeout(r, 500))
    const now = rssMiB(pid)
    if (Math.abs(now - last) < 1) return now
    last = now
  }
  return last
}

async function produceInto(b: { bootstrap: string }, topic: string, records: number, warmup: number, s: ProducerSettings, valueBytes?: number): Promise<ProduceResult> {
  // A chunk near batch.size's worth of bytes per partition, at least one record.
  const chunk = valueBytes === undefined ? CHUNK : Math.max(1, Math.floor((CHUNK * 136) / valueBytes))
  return runChild<ProduceResult>(
    { kind: 'produce', client: 'tidelog', bootstrap: b.bootstrap, topic, records, warmupRecords: warmup, chunk, window: valueBytes === undefined ? WINDOW : 16, settings: s, valueBytes },
    600_000,
  )
}

async function consumeFrom(b: { bootstrap: string }, topic: string, records: number, valueBytes?: number): Promise<ConsumeResult> {
  return runChild<ConsumeResult>({ kind: 'consume', client: 'tidelog', bootstrap: b.bootstrap, topic, records, groupId: `bench-${topic}`, valueBytes }, 600_000)
}

// --- B1 partitions ------------------------------------------------------------------------

/**
 * One partition count on one broker: create the topic, RSS per idle partition, produce then
 * consume `records` (tidelog client), delete. On the tidelog broker the restart time with the
 * data is measured too, on a broker of its own (the shared one keeps running).
 */
async function partitionsOnce(b: BrokerHandle, partitions: number, records: number): Promise<Metrics> {
  const topic = topicName(`b1-${partitions}`)
  const before = await settledRss(b.pid, 2_000)
  await createTopic(b, topic, partitions)
  try {
    const idle = await settledRss(b.pid, 10_000)
    const p = await produceInto(b, topic, records, Math.min(records / 5, 50_000), BASE)
    const c = await consumeFrom(b, topic, records)
    return { produce: p.records / (p.ms / 1000), consume: c.records / (c.ms / 1000), rssPerPartitionKiB: ((idle - before) * 1024) / partitions, rss: rssMiB(b.pid) }
  } finally {
    await deleteTopic(b, topic)
  }
}

async function javaProduce(b: BrokerHandle, partitions: number, records: number): Promise<Metrics> {
  const topic = topicName(`b1j-${partitions}`)
  await createTopic(b, topic, partitions)
  try {
    return { produce: await producerPerformance(b.bootstrap, topic, records, Math.min(records / 5, 50_000), BASE) }
  } finally {
    await deleteTopic(b, topic)
  }
}

/** A tidelog broker of its own: start, create `partitions`, fill, stop, time the restart to ApiVersions. */
async function tidelogRestart(partitions: number, records: number): Promise<Metrics> {
  const dir = mkdtempSync(join(tmpdir(), 'tidelog-bench-b1-'))
  const args = ['--port', '0', '--data-dir', dir, '--log-level', 'warn']
  try {
    const first = await spawnTidelogBroker(args, 120_000)
    const port = first.port
    try {
      const topic = topicName(`b1r-${partitions}`)
      await createTopic({ bootstrap: `127.0.0.1:${port}` } as BrokerHandle, topic, partitions)
      await produceInto({ bootstrap: `127.0.0.1:${port}` }, topic, records, 0, BASE)
    } finally {
      await stopProcess(first.proc)
    }
    const t0 = performance.now()
    const again = await spawnTidelogBroker(['--port', String(port), '--data-dir', dir, '--log-level', 'warn'], 300_000)
    try {
      const answered = await waitForApiVersions(port, t0 + 300_000, () => again.proc.exitCode === null)
      return { restartMs: answered - t0, rss: rssMiB(again.proc.pid!) }
    } finally {
      await stopProcess(again.proc)
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

async function b1(ctx: RunContext): Promise<ScenarioResult[]> {
  const counts = ctx.quick ? [1, 100] : [1, 100, 1_000, 10_000]
  const records = ctx.quick ? 20_000 : 300_000
  const rows: ScenarioResult[] = []
  for (const partitions of counts) {
    const id = `B1.${partitions}`
    ctx.log(`${id}: ${partitions.toLocaleString('en')} partition${partitions === 1 ? '' : 's'}`)
    // The Java client produces only (ProducerPerformance); consume and RSS are the tidelog client's runs.
    const m = await matrix(ctx, id, ['tidelog', 'java'], (b, client) => (client === 'java' ? javaProduce(b, partitions, records) : partitionsOnce(b, partitions, records)))
    const head = (metric: string, title: string, unit: string, higherIsBetter: boolean, clients: Array<'tidelog' | 'java'> = ['tidelog']) =>
      rowsOf(m, { id: `${id}.${metric}`, title: `${partitions.toLocaleString('en')} partition${partitions === 1 ? '' : 's'} in one topic: ${title}`, unit, higherIsBetter }, metric, clients, clients, [
        `tidelog client (and, producing, Java's ProducerPerformance), ${records.toLocaleString('en')} records of 100 B, keys spread over the partitions; like-for-like producer settings (acks=1, linger 5 ms, batch 16384 B)`,
        'RSS per idle partition: the broker\'s settled RSS after the topic was created minus before, divided by the partition count',
        `open-file limit (ulimit -n, raised by the bench): ${openFileLimit()}`,
      ]).filter((r) => r.id.includes('.brokers('))
    rows.push(...head('produce', 'produce', 'records/s', true, ['tidelog', 'java']), ...head('consume', 'consume', 'records/s', true), ...head('rssPerPartitionKiB', 'RSS per idle partition', 'KiB', false))
    const restart = await interleave([{ name: 'tidelog-broker', run: () => tidelogRestart(partitions, Math.min(records, 50_000)) }], {
      rounds: ctx.rounds,
      onRun: (n, r, x) => ctx.log(`  ${id}.restart ${n} round ${r + 1}: ${x instanceof Error ? `FAILED ${x.message}` : `${Math.round(x.restartMs!)} ms`}`),
    })
    rows.push(
      makeRow({ id: `${id}.restart`, title: `${partitions.toLocaleString('en')} partition${partitions === 1 ? '' : 's'}: broker restart with that metadata and data, to the first ApiVersions answer`, unit: 'ms', higherIsBetter: false }, [
        ['tidelog-broker', entryOf(restart.get('tidelog-broker'), 'restartMs')],
        ['kafka', 'not measured: the bench restarts its own tidelog broker; a restart of Apache Kafka with the same data is not implemented yet'],
      ]),
    )
  }
  return rows
}

// --- B3 several producers -----------------------------------------------------------------

const PRODUCERS = 4

async function b3(ctx: RunContext): Promise<ScenarioResult[]> {
  const records = ctx.quick ? 20_000 : 300_000
  ctx.log(`B3: ${PRODUCERS} producer processes into one broker`)
  const m = await matrix(ctx, 'B3', ['tidelog'], async (b) => {
    const topic = topicName('b3')
    await createTopic(b, topic)
    try {
      const runs = await Promise.all(Array.from({ length: PRODUCERS }, () => produceInto(b, topic, records, Math.min(records / 5, 50_000), BASE)))
      // One window over every process's timed part: from the first start to the last end.
      const start = Math.min(...runs.map((r) => r.startedAt))
      const end = Math.max(...runs.map((r) => r.endedAt))
      const bytes = runs.reduce((a, r) => a + r.bytes, 0)
      return { mbps: bytes / 1e6 / ((end - start) / 1000) }
    } finally {
      await deleteTopic(b, topic)
    }
  })
  ctx.log('B3: limits (loopback TCP, disk) in the same run')
  const limits = await interleave(
    [
      { name: 'tcp', run: async () => ({ rate: await loopbackTcp(ctx.quick ? 500 : 2000) }) },
      { name: 'disk', run: async () => ({ rate: sequentialDisk((ctx.quick ? 256 : 1024) * 2 ** 20) }) },
    ],
    { rounds: ctx.rounds },
  )
  const rows = rowsOf(m, { id: 'B3', title: `${PRODUCERS} producer processes (tidelog client), ${records.toLocaleString('en')} records each, into one topic`, unit: 'MB/s', higherIsBetter: true }, 'mbps', ['tidelog'], ['tidelog'], [
    `MB/s of keys and values (${KEY_BYTES + 100} B a record), over one window from the first process's timed start to the last one's end; acks=1, linger 5 ms, batch 16384 B`,
  ]).filter((r) => r.id.includes('.brokers('))
  const tcp = limits.get('tcp')?.metrics.get('rate')
  const disk = limits.get('disk')?.metrics.get('rate')
  const ours = rows[0]?.results['tidelog-broker']
  if (tcp !== undefined && disk !== undefined && ours !== undefined) {
    const limit = tcp.median < disk.median ? { name: 'tcp', s: tcp } : { name: 'disk', s: disk }
    rows.push({
      id: 'B3.limit',
      title: `${PRODUCERS} producers into the tidelog broker against the smaller physical limit (${limit.name}), measured in this run`,
      unit: 'MB/s',
      higherIsBetter: true,
      results: { 'tidelog-broker': ours, [`limit (${limit.name})`]: limit.s },
      ratios: { [`tidelog-broker/limit (${limit.name})`]: Math.round((ours.median / limit.s.median) * 1000) / 1000 },
      notes: ['goal: >= 50% of the smaller limit; the bytes counted are keys and values, not the batch framing'],
    })
  }
  return rows
}

// --- B4 large records ---------------------------------------------------------------------

// 1 MB, not 1 MiB: a 1 MiB value with its record and batch headers is above Kafka's default
// message.max.bytes (1048588) and the Java producer's max.request.size (1048576).
const LARGE = [
  { name: '100KiB', bytes: 100 * 1024 },
  { name: '1MB', bytes: 1_000_000 },
]

async function b4(ctx: RunContext): Promise<ScenarioResult[]> {
  const rows: ScenarioResult[] = []
  for (const size of LARGE) {
    // About 0.4 GB a run in full mode, 40 MB in quick.
    const records = Math.round((ctx.quick ? 40e6 : 400e6) / size.bytes)
    const id = `B4.${size.name}`
    ctx.log(`${id}: ${records} records of ${size.name}`)
    const mp = (r: { records: number }, ms: number) => (r.records * (KEY_BYTES + size.bytes)) / 1e6 / (ms / 1000)
    const m = await matrix(ctx, id, ['tidelog', 'java'], async (b, client): Promise<Metrics> => {
      const topic = topicName(`b4-${size.name}`)
      await createTopic(b, topic)
      try {
        if (client === 'java') {
          const rate = await producerPerformance(b.bootstrap, topic, records, Math.ceil(records / 5), BASE, undefined, size.bytes)
          return { produce: (rate * (KEY_BYTES + size.bytes)) / 1e6 }
        }
        const p = await produceInto(b, topic, records, Math.ceil(records / 5), BASE, size.bytes)
        const total = records + Math.ceil(records / 5)
        const c = await consumeFrom(b, topic, total, size.bytes)
        return { produce: mp(p, p.ms), consume: mp(c, c.ms) }
      } finally {
        await deleteTopic(b, topic)
      }
    })
    const notes = [`values of ${size.bytes.toLocaleString('en')} B (1 MB rather than 1 MiB: Kafka's default message.max.bytes); Java: ProducerPerformance --record-size; tidelog client: one record per send() call, 16 awaiting acknowledgement; acks=1, linger 5 ms, batch 16384 B`]
    rows.push(...rowsOf(m, { id: `${id}.produce`, title: `produce ${size.name} records`, unit: 'MB/s', higherIsBetter: true }, 'produce', ['tidelog', 'java'], ['tidelog', 'java'], notes))
    rows.push(
      ...rowsOf(m, { id: `${id}.consume`, title: `consume ${size.name} records (tidelog client)`, unit: 'MB/s', higherIsBetter: true }, 'consume', ['tidelog'], ['tidelog'], notes).filter((r) => r.id.includes('.brokers(')),
    )
  }
  return rows
}

export const scale: Suite = {
  name: 'scale',
  description: 'B1 1/100/1,000/10,000 partitions, B2 1,000 idle connections + a producer, B3 4 producer processes against the physical limits, B4 100 KiB and 1 MB records, B5 latency at 10k and 100k records/s with the broker\'s event-loop delay, B6 RSS under a consumer that does not read: tidelog broker vs Apache Kafka',
  ids: ['B1', 'B2', 'B3', 'B4', 'B5', 'B6'],
  // Minutes even at small sizes: `npm run bench -- scale --quick` runs it quick.
  inQuick: false,
  async run(ctx) {
    const rows: ScenarioResult[] = []
    if (wants(ctx, 'B1')) rows.push(...(await b1(ctx)))
    if (wants(ctx, 'B2')) rows.push(...(await b2(ctx)))
    if (wants(ctx, 'B3')) rows.push(...(await b3(ctx)))
    if (wants(ctx, 'B4')) rows.push(...(await b4(ctx)))
    if (wants(ctx, 'B5')) rows.push(...(await b5(ctx)))
    if (wants(ctx, 'B6')) rows.push(...(await b6(ctx)))
    return rows
  },
}
