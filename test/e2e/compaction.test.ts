import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBroker, type Broker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'
import { Producer } from '@tidelog/producer'
import { afterEach, describe, expect, it } from 'vitest'

// Our producer writes keys and tombstones to compacted topics on the tidelog
// broker; a consumer reading from the beginning sees what Kafka's cleaner keeps.

const teardown: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const f of teardown.splice(0).reverse()) await f().catch(() => {})
})

async function start(opts: Partial<Parameters<typeof startBroker>[0]> = {}): Promise<{ broker: Broker; brokers: string[]; admin: Admin; producer: Producer }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tidelog-compaction-e2e-'))
  const broker = await startBroker({ port: 0, dataDir, logCleanerBackoffMs: 20, ...opts })
  const brokers = [`127.0.0.1:${broker.port}`]
  const admin = new Admin({ brokers })
  const producer = new Producer({ brokers, lingerMs: 0 })
  teardown.push(async () => {
    await producer.close()
    await admin.close()
    await broker.close()
    rmSync(dataDir, { recursive: true, force: true })
  })
  return { broker, brokers, admin, producer }
}

type Row = [offset: number, key: string, value: string | null]

async function readFromStart(brokers: string[], topic: string, through: number): Promise<Row[]> {
  const c = new Consumer({ brokers, autoOffsetReset: 'earliest' })
  try {
    c.assign([{ topic, partition: 0 }])
    const out: Row[] = []
    for await (const m of c) {
      out.push([Number(m.offset), m.key!.toString(), m.value === null ? null : m.value.toString()])
      if (Number(m.offset) >= through) break
    }
    return out
  } finally {
    await c.close()
  }
}

/** Reads until the log reads as `expected` (the cleaner runs in the background), or fails at the deadline. */
async function eventually(brokers: string[], topic: string, expected: Row[], deadlineMs = 30_000): Promise<void> {
  const until = Date.now() + deadlineMs
  let seen: Row[] = []
  while (Date.now() < until) {
    seen = await readFromStart(brokers, topic, expected[expected.length - 1]![0])
    if (JSON.stringify(seen) === JSON.stringify(expected)) return
    await new Promise((r) => setTimeout(r, 50))
  }
  expect(seen).toEqual(expected)
}

/** The latest record of every key, in offset order: what a cleaned log holds below its active segment. */
function model(rows: Row[], dropTombstones: boolean): Row[] {
  const last = new Map<string, Row>()
  for (const r of rows) last.set(r[1], r)
  return [...last.values()].filter((r) => !(dropTombstones && r[2] === null)).sort((a, b) => a[0] - b[0])
}

// Every producer batch gets a segment of its own (internal.segment.bytes), so
// everything but the last one sent is below the active segment and cleanable.
const CONFIGS = { 'cleanup.policy': 'compact', 'internal.segment.bytes': '100', 'min.cleanable.dirty.ratio': '0.01' }

async function produce(producer: Producer, topic: string, key: string, value: string | null): Promise<Row> {
  const meta = await producer.send({ topic, partition: 0, key, value })
  return [Number(meta.offset), key, value]
}

describe('log compaction end to end over a socket', () => {
  it('a consumer from the beginning sees the latest value of every key and the tombstones delete.retention.ms keeps', async () => {
    const { brokers, admin, producer } = await start()
    await admin.createTopics([{ name: 'table', partitions: 1, configs: { ...CONFIGS, 'delete.retention.ms': '86400000' } }])
    const written: Row[] = []
    for (let round = 0; round < 4; round++) {
      for (let k = 0; k < 6; k++) written.push(await produce(producer, 'table', `k${k}`, round === 2 && k % 3 === 0 ? null : `v${round}-${k}`))
    }
    written.push(await produce(producer, 'table', 'k1', null))
    const sentinel = await produce(producer, 'table', 'sentinel', 'end')
    await eventually(brokers, 'table', [...model(written, false), sentinel])
    const seen = await readFromStart(brokers, 'table', sentinel[0])
    // Every surviving offset was produced with exactly that key and value.
    const byOffset = new Map(written.map((r) => [r[0], r]))
    for (const r of seen.slice(0, -1)) expect(byOffset.get(r[0])).toEqual(r)
    expect(seen.filter((r) => r[2] === null).map((r) => r[1])).toEqual(['k1'])
    // A record without a key cannot be compacted: refused as Kafka refuses it, and nothing is written.
    const err = await producer.send({ topic: 'table', partition: 0, value: 'no key' }).then(() => undefined, (e: unknown) => e)
    expect(String((err as Error | undefined)?.message)).toMatch(/INVALID_RECORD|Compacted topic cannot accept message without key in topic partition table-0/)
    expect((await produce(producer, 'table', 'after', 'x'))[0]).toBe(sentinel[0] + 1)
  })

  it('a live topic switched to compact by IncrementalAlterConfigs (as Kafka Streams and Connect expect) is cleaned from then on', async () => {
    const { brokers, admin, producer } = await start()
    await admin.createTopics([{ name: 'switch', partitions: 1, configs: { 'internal.segment.bytes': '100' } }])
    const written: Row[] = []
    for (let i = 0; i < 12; i++) written.push(await produce(producer, 'switch', `k${i % 3}`, `v${i}`))
    await admin.incrementalAlterConfigs([{ type: 'topic', name: 'switch', configs: [{ name: 'cleanup.policy', value: 'compact' }, { name: 'min.cleanable.dirty.ratio', value: '0.01' }] }])
    const described = await admin.describeConfigs([{ type: 'topic', name: 'switch', keys: ['cleanup.policy'] }])
    expect(JSON.stringify(described)).toContain('compact')
    const sentinel = await produce(producer, 'switch', 'sentinel', 'end')
    await eventually(brokers, 'switch', [...model(written, false), sentinel])
  })

  it('with delete.retention.ms=0 a later cleaning removes the tombstones too, and produce still gets the next offsets', async () => {
    const { brokers, admin, producer } = await start()
    await admin.createTopics([{ name: 'gone', partitions: 1, configs: { ...CONFIGS, 'delete.retention.ms': '0' } }])
    const written: Row[] = []
    for (let k = 0; k < 5; k++) written.push(await produce(producer, 'gone', `k${k}`, 'a'))
    for (let k = 0; k < 5; k += 2) written.push(await produce(producer, 'gone', `k${k}`, null))
    // Each new batch rolls a segment, so the one before becomes dirty and the cleaner runs again:
    // the pass after the one that stamped a tombstone's horizon removes it.
    const until = Date.now() + 30_000
    let last: Row[] = []
    for (let i = 0; Date.now() < until; i++) {
      written.push(await produce(producer, 'gone', `sentinel-${i}`, 'x'))
      last = await readFromStart(brokers, 'gone', written[written.length - 1]![0])
      if (!last.some((r) => r[2] === null)) break
    }
    expect(last).toEqual(model(written, true))
    const next = await produce(producer, 'gone', 'after', 'y')
    expect(next[0]).toBe(written[written.length - 1]![0] + 1)
  })

  it("reports Kafka's cleaner gauges on /metrics once a pass has run", async () => {
    const { broker, brokers, admin, producer } = await start({ consolePort: 0 })
    await admin.createTopics([{ name: 'gauged', partitions: 1, configs: CONFIGS }])
    const written: Row[] = []
    for (let i = 0; i < 12; i++) written.push(await produce(producer, 'gauged', `k${i % 3}`, `v${i}`))
    const sentinel = await produce(producer, 'gauged', 'sentinel', 'end')
    await eventually(brokers, 'gauged', [...model(written, false), sentinel])
    const gauges = async (): Promise<Map<string, number>> => {
      const text = await (await fetch(`${broker.console!.url}metrics`)).text()
      const out = new Map<string, number>()
      for (const m of text.matchAll(/^(kafka_log_logcleaner\w*)(?:\{[^}]*\})? (\S+)$/gm)) out.set(m[1]!, Number(m[2]))
      return out
    }
    const g = await gauges()
    expect([...g.keys()].sort()).toEqual([
      'kafka_log_logcleaner_cleaner_recopy_percent',
      'kafka_log_logcleaner_max_buffer_utilization_percent',
      'kafka_log_logcleaner_max_clean_time_secs',
      'kafka_log_logcleanermanager_max_dirty_percent',
      'kafka_log_logcleanermanager_time_since_last_run_ms',
      'kafka_log_logcleanermanager_uncleanable_bytes',
      'kafka_log_logcleanermanager_uncleanable_partitions_count',
    ])
    // The pass that compacted the topic wrote less than it read, used some of the key map, and took time.
    expect(g.get('kafka_log_logcleaner_cleaner_recopy_percent')).toBeGreaterThan(0)
    expect(g.get('kafka_log_logcleaner_cleaner_recopy_percent')).toBeLessThanOrEqual(100)
    expect(g.get('kafka_log_logcleaner_max_buffer_utilization_percent')).toBeGreaterThan(0)
    expect(g.get('kafka_log_logcleaner_max_clean_time_secs')).toBeGreaterThan(0)
    expect(g.get('kafka_log_logcleanermanager_uncleanable_partitions_count')).toBe(0)
    // The cleaner checks every log.cleaner.backoff.ms (20 ms here): the time since its last run stays small.
    expect(g.get('kafka_log_logcleanermanager_time_since_last_run_ms')).toBeLessThan(10_000)
  })
})
