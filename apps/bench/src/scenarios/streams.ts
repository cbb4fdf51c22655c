// ST1-ST4: issues 14 and 15's streams benchmarks, @tidelog/streams and Kafka Streams (Java) 4.4
// running the same topology with the same settings on the same broker, end to end: the input
// is produced first, then each program runs from its start until the last output is read.
// (ST, not S: S1 is the broker start-up scenario.)
import { Producer, type ProducerRecord } from '@tidelog/producer'
import { createTopic, deleteTopic, PARTITIONS, type BrokerHandle, type BrokerKind } from '../env/brokers.js'
import type { ScenarioResult, Suite } from '../types.js'
import type { StreamsScenario } from '../streams/shape.js'
import { streamsOnce, type StreamsImpl } from '../streams/run.js'
import { matrix, rowsOf, topicName, wants } from './clients.js'

/** Kafka Streams' default under at_least_once, set explicitly for both programs. */
const COMMIT_INTERVAL_MS = 30_000
/** Distinct keys (ST3, ST4's table) and words (ST2). */
const KEYS = 10_000
const IMPLS: StreamsImpl[] = ['tidelog', 'java']

type Id = 'ST1' | 'ST2' | 'ST3' | 'ST4'
const SCENARIO: Record<Id, StreamsScenario> = { ST1: 'S1', ST2: 'S2', ST3: 'S3', ST4: 'S4' }

const LONG = (v: Buffer | null) => (v?.length === 8 ? undefined : `value of ${v?.length ?? 'null'} bytes, not a long`)
/** Each scenario's title, and a check of the outputs' shape (the first record of each fetched batch). */
const SHAPES: Record<Id, { title: (n: string) => string; check: (k: Buffer | null, v: Buffer | null) => string | undefined }> = {
  ST1: {
    title: (n) => `stateless filter + mapValues over ${n} records`,
    check: (_k, v) => (/^W\d{4}$/.test(v?.toString() ?? '') ? undefined : `value ${v?.toString()}`),
  },
  ST2: {
    title: (n) => `count per word (groupBy, through a repartition topic) over ${n} records, ${KEYS.toLocaleString('en')} words`,
    check: (k, v) => (/^w\d{4}$/.test(k?.toString() ?? '') ? LONG(v) : `key ${k?.toString()}`),
  },
  ST3: {
    title: (n) => `1-minute tumbling windowed count over ${n} records, ${KEYS.toLocaleString('en')} keys`,
    // TimeWindowedSerializer: the key's bytes then the window start as 8 bytes.
    check: (k, v) => (k?.length === 13 && /^k\d{4}$/.test(k.subarray(0, 5).toString()) ? LONG(v) : `key of ${k?.length ?? 'null'} bytes`),
  },
  ST4: {
    title: (n) => `stream-table left join, ${n} stream records against a ${KEYS.toLocaleString('en')}-key table`,
    check: (_k, v) => (/^w\d{4}\|(t\d+|null)$/.test(v?.toString() ?? '') ? undefined : `value ${v?.toString()}`),
  },
}

/**
 * --quick (CI): a small ST1 by @tidelog/streams on the tidelog broker, which proves the path in
 * seconds (a Kafka Streams JVM start and group join alone take longer than the phase allows).
 * The full run takes one round: a cell is a million records (tens of seconds to minutes on a
 * shared machine), and 16 cells in one round already take a quarter of an hour.
 */
function sizes(quick: boolean): { records: number; ids: Id[]; impls: StreamsImpl[]; rounds: number } {
  return quick ? { records: 20_000, ids: ['ST1'], impls: ['tidelog'], rounds: 1 } : { records: 1_000_000, ids: ['ST1', 'ST2', 'ST3', 'ST4'], impls: IMPLS, rounds: 1 }
}
const QUICK_SKIP = { kafka: 'left out of --quick; the full run has it' }

const pad = (n: number) => String(n).padStart(4, '0')

interface Inputs {
  stream: string
  table: string
  /** ST1's expected output: the values not ending in 0. */
  kept: number
}

/**
 * The input every scenario reads: keys k0000..k9999 and values (words) w0000..w9999, drawn by
 * xorshift, with timestamps 1 ms apart (about 17 one-minute windows for a million records);
 * ST4's table has every key once, stamped before the first stream record.
 */
async function produceInputs(b: BrokerHandle, records: number): Promise<Inputs> {
  const stream = topicName('st-in')
  const table = topicName('st-table')
  await createTopic(b, stream)
  await createTopic(b, table)
  const p = new Producer({ brokers: [b.bootstrap], clientId: 'tidelog-bench-streams-input', acks: 1, lingerMs: 5 })
  await p.connect()
  try {
    const base = Date.now() - 2 * records - KEYS
    const tableRecords: ProducerRecord[] = Array.from({ length: KEYS }, (_, j) => ({ topic: table, key: `k${pad(j)}`, value: `t${j}`, timestamp: base + j }))
    await p.send(tableRecords)
    let x = 2463534242
    const next = () => {
      x ^= x << 13
      x ^= x >>> 17
      x ^= x << 5
      return (x >>> 0) % KEYS
    }
    let kept = 0
    const CHUNK = 5000
    for (let i = 0; i < records; i += CHUNK) {
      const chunk: ProducerRecord[] = []
      for (let j = i; j < Math.min(records, i + CHUNK); j++) {
        const word = next()
        if (word % 10 !== 0) kept++
        chunk.push({ topic: stream, key: `k${pad(next())}`, value: `w${pad(word)}`, timestamp: base + KEYS + j })
      }
      await p.send(chunk)
    }
    return { stream, table, kept }
  } finally {
    await p.close()
  }
}

let seq = 0

export const streams: Suite = {
  name: 'streams',
  description: 'ST1 filter+mapValues, ST2 count per word (repartition), ST3 1-minute windowed count, ST4 stream-table join: @tidelog/streams vs Kafka Streams (Java) 4.4',
  ids: ['ST1', 'ST2', 'ST3', 'ST4'],
  async run(ctx) {
    const n = sizes(ctx.quick)
    const rows: ScenarioResult[] = []
    const inputs = new Map<BrokerKind, Promise<Inputs>>()
    const inputOf = (b: BrokerHandle) => {
      let i = inputs.get(b.kind)
      if (i === undefined) {
        ctx.log(`  streams: producing ${n.records.toLocaleString('en')} input records to ${b.label}`)
        i = produceInputs(b, n.records)
        inputs.set(b.kind, i)
      }
      return i
    }
    const count = n.records.toLocaleString('en')
    for (const id of n.ids) {
      if (!wants(ctx, id)) continue
      ctx.log(`${id}: ${SHAPES[id].title(count)}`)
      const m = await matrix(
        { ...ctx, rounds: n.rounds },
        id,
        n.impls,
        async (b, impl) => {
          const input = await inputOf(b)
          const output = topicName(`st-out-${impl}`)
          await createTopic(b, output)
          const r = await streamsOnce(
            impl,
            b,
            { scenario: SCENARIO[id], appId: `bench-streams-${id.toLowerCase()}-${impl}-${process.pid}-${++seq}`, input: input.stream, output, table: input.table, commitIntervalMs: COMMIT_INTERVAL_MS },
            n.records,
            id === 'ST1' ? input.kept : n.records,
            PARTITIONS,
            SHAPES[id].check,
            600_000,
          )
          return { ...r }
        },
        ctx.quick ? QUICK_SKIP : {},
      )
      rows.push(
        ...rowsOf(
          m,
          { id, title: SHAPES[id].title(count), unit: 'records/s', higherIsBetter: true },
          'rate',
          n.impls,
          ctx.quick ? [] : n.impls,
          [
            `end to end: input records / (time from the program's start() to the last output record read); the input (${PARTITIONS} partitions) is produced before, the reader is fetching before the program starts; the time includes the group join and internal topic creation`,
            `both: processing.guarantee at_least_once, commit.interval.ms ${COMMIT_INTERVAL_MS}, 1 stream thread, no record cache (Java: statestore.cache.max.bytes 0) and in-memory stores (Java: InMemoryDslStoreSuppliers), so every update is forwarded; Java: Kafka Streams 4.4.0, -Xmx1g`,
            `${n.rounds} round per cell (a cell is ${count} records), whatever the other suites' rounds`,
          ],
        ),
        // Where the time goes before the first result (group join, topic creation, and how soon
        // the first fetched records reach the output); its own row, not part of any goal.
        ...rowsOf(m, { id: `${id}.first`, title: `${SHAPES[id].title(count)}: time from start() to the first output record`, unit: 'ms', higherIsBetter: false }, 'firstMs', n.impls, [], []),
      )
    }
    for (const [kind, i] of inputs) {
      const input = await i.catch(() => undefined)
      if (input === undefined) continue
      const b = await ctx.brokers.get(kind)
      await deleteTopic(b, input.stream)
      await deleteTopic(b, input.table)
    }
    return rows
  },
}
