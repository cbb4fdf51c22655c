import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Broker, startBroker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
import { Producer } from '@tidelog/producer'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KAFKA_VERSIONS, peerUnavailable, startKafka, type KafkaNode } from '../helpers/kafka.js'
import { kcat } from '../helpers/kcat.js'
import { kafkaUse, kcatVersion, recordsPeers } from '../helpers/peers.js'

// The same keyed workload (updates and tombstones, small segments, an eager
// cleaner) on Apache Kafka 4.4 and on tidelog-broker; kcat (librdkafka) reads
// each from the beginning once its cleaner has run. Both must keep exactly
// the (offset, key, value) set Kafka's rules give: the latest record of every
// key below the active segment, tombstones until delete.retention.ms after
// the cleaning that first kept them.

const version = KAFKA_VERSIONS.latest


type Row = [offset: number, key: string, value: string | null]

async function readWithKcat(bootstrap: string, topic: string): Promise<Row[]> {
  const r = await kcat(['-b', bootstrap, '-C', '-t', topic, '-p', '0', '-o', 'beginning', '-e', '-q', '-Z', '-f', '%o\t%k\t%s\n'])
  if (r.status !== 0) throw new Error(`kcat failed: ${r.stderr}`)
  return r.stdout
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => {
      const [o, k, v] = l.split('\t')
      return [Number(o), k!, v === 'NULL' ? null : v!]
    })
}

/** Kafka's rules over what was written, once every segment but the active one (the last row's) is cleaned. */
function expected(written: Row[], dropTombstones: boolean): Row[] {
  const last = new Map<string, Row>()
  for (const r of written.slice(0, -1)) last.set(r[1], r)
  const kept = [...last.values()].filter((r) => !(dropTombstones && r[2] === null))
  return [...kept, written[written.length - 1]!].sort((a, b) => a[0] - b[0])
}

// internal.segment.bytes (Kafka's testing knob, accepted by both) rolls at the same bytes on
// both brokers, since both store the producer's batches as sent.
const TOPIC_CONFIGS = { 'cleanup.policy': 'compact', 'internal.segment.bytes': '1024', 'min.cleanable.dirty.ratio': '0.01', 'segment.ms': '600000' }
/** Larger than what is left of any segment: it rolls one of its own, so everything before it is cleanable. */
const SENTINEL = 'S'.repeat(900)

interface Target {
  name: string
  bootstrap: string
  admin: Admin
  producer: Producer
}

function target(name: string, bootstrap: string): Target {
  return { name, bootstrap, admin: new Admin({ brokers: [bootstrap] }), producer: new Producer({ brokers: [bootstrap], lingerMs: 0 }) }
}

async function send(t: Target, topic: string, key: string, value: string | null): Promise<Row> {
  const m = await t.producer.send({ topic, partition: 0, key, value })
  return [Number(m.offset), key, value]
}

/** Reads until the log reads as `want` (the cleaner is in the background), up to a deadline. */
async function until(t: Target, topic: string, want: Row[], ms = 60_000): Promise<Row[]> {
  const deadline = Date.now() + ms
  let seen: Row[] = []
  while (Date.now() < deadline) {
    seen = await readWithKcat(t.bootstrap, topic)
    if (JSON.stringify(seen) === JSON.stringify(want)) return seen
    await new Promise((r) => setTimeout(r, 200))
  }
  return seen
}

describe(`log compaction on tidelog-broker and Apache Kafka ${version}, read by kcat`, () => {
  let kafka: KafkaNode | undefined
  let broker: Broker | undefined
  let dataDir: string | undefined
  let skip: string | undefined
  let kcatSeen: string | undefined
  const targets: Target[] = []
  recordsPeers(() => (kafka && kcatSeen ? [...kafkaUse(kafka)!, { peer: 'kcat', version: kcatSeen }] : undefined))

  beforeAll(async () => {
    try {
      kcatSeen = kcatVersion()
      kafka = await startKafka({ version, properties: { 'log.cleaner.backoff.ms': 100 } })
    } catch (e) {
      skip = peerUnavailable(`Apache Kafka ${version} and kcat`, e) as string
      return
    }
    dataDir = mkdtempSync(join(tmpdir(), 'tidelog-compaction-interop-'))
    broker = await startBroker({ port: 0, dataDir, logCleanerBackoffMs: 100 })
    targets.push(target('kafka', kafka.bootstrap), target('tidelog', `127.0.0.1:${broker.port}`))
  })
  afterAll(async () => {
    for (const t of targets) {
      await t.producer.close().catch(() => {})
      await t.admin.close().catch(() => {})
    }
    await broker?.close()
    await kafka?.stop()
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true })
  })

  it('keeps the same latest record per key and the tombstones within delete.retention.ms', async (ctx) => {
    if (skip) return ctx.skip()
    const results = await Promise.all(
      targets.map(async (t) => {
        await t.admin.createTopics([{ name: 'table', partitions: 1, configs: { ...TOPIC_CONFIGS, 'delete.retention.ms': '86400000' } }])
        const written: Row[] = []
        for (let round = 0; round < 5; round++) {
          for (let k = 0; k < 8; k++) written.push(await send(t, 'table', `key-${k}`, round === 4 && k % 4 === 1 ? null : `value-${round}-${k}`))
        }
        written.push(await send(t, 'table', 'sentinel', SENTINEL))
        const want = expected(written, false)
        return { t, written, want, seen: await until(t, 'table', want) }
      }),
    )
    const [onKafka, onTidelog] = results
    // Same workload, same offsets on both brokers.
    expect(onTidelog!.written).toEqual(onKafka!.written)
    expect(onKafka!.seen).toEqual(onKafka!.want)
    expect(onTidelog!.seen).toEqual(onKafka!.seen)
    expect(onTidelog!.seen.filter((r) => r[2] === null).length).toBe(2)
  })

  it('removes tombstones past delete.retention.ms=0 at a later cleaning, as Kafka does', async (ctx) => {
    if (skip) return ctx.skip()
    const results = await Promise.all(
      targets.map(async (t) => {
        await t.admin.createTopics([{ name: 'gone', partitions: 1, configs: { ...TOPIC_CONFIGS, 'delete.retention.ms': '0' } }])
        const written: Row[] = []
        for (let k = 0; k < 6; k++) written.push(await send(t, 'gone', `key-${k}`, `v-${k}`))
        for (let k = 0; k < 6; k += 2) written.push(await send(t, 'gone', `key-${k}`, null))
        // Each sentinel rolls a segment and leaves the previous one dirty, so the cleaner runs
        // again; the pass after the one that stamped a tombstone's horizon removes it.
        const deadline = Date.now() + 60_000
        let seen: Row[] = []
        for (let i = 0; Date.now() < deadline; i++) {
          written.push(await send(t, 'gone', `sentinel-${i}`, SENTINEL))
          seen = await until(t, 'gone', expected(written, true), 3_000)
          if (JSON.stringify(seen) === JSON.stringify(expected(written, true))) break
        }
        return { seen, written }
      }),
    )
    for (const r of results) expect(r.seen).toEqual(expected(r.written, true))
    // The same records of the workload survive on both: the tombstones and what they deleted are gone.
    const workload = (rows: Row[]) => rows.filter((r) => !r[1].startsWith('sentinel'))
    expect(workload(results[1]!.seen)).toEqual(workload(results[0]!.seen))
    expect(workload(results[0]!.seen).map((r) => r[1])).toEqual(['key-1', 'key-3', 'key-5'])
  })

  it("Kafka's DumpLogSegments reads tidelog's cleaned segments and indexes without an error", async (ctx) => {
    if (skip) return ctx.skip()
    const dir = join(dataDir!, 'table-0')
    const files = readdirSync(dir).filter((f) => f.endsWith('.log') || f.endsWith('.index') || f.endsWith('.timeindex')).map((f) => join(dir, f))
    const out = await kafka!.java('org.apache.kafka.tools.DumpLogSegments', ['--deep-iteration', '--print-data-log', '--files', files.join(',')])
    expect(out.stderr).not.toMatch(/Exception|error/i)
    expect(out.stdout).toContain('key: key-0')
    expect(out.stdout).not.toMatch(/Mismatches in|corrupt/i)
  })

  // Here for the JVM and the tidelog broker this file already has (CI time), not for compaction.
  it("Kafka's kafka-reassign-partitions.sh --execute and --verify on tidelog-broker: a move to its own broker completes", async (ctx) => {
    if (skip) return ctx.skip()
    const bootstrap = `127.0.0.1:${broker!.port}`
    const admin = new Admin({ brokers: [bootstrap] })
    await admin.createTopics([{ name: 'moved', partitions: 2 }])
    await admin.close()
    const plan = join(dataDir!, 'reassignment.json')
    const partitions = [0, 1].map((partition) => ({ topic: 'moved', partition, replicas: [broker!.nodeId], log_dirs: ['any'] }))
    writeFileSync(plan, JSON.stringify({ version: 1, partitions }))
    const tool = 'org.apache.kafka.tools.reassign.ReassignPartitionsCommand'
    const run = await kafka!.java(tool, ['--bootstrap-server', bootstrap, '--reassignment-json-file', plan, '--execute'])
    expect(run.stdout).toContain('Successfully started partition reassignments for moved-0,moved-1')
    const verify = await kafka!.java(tool, ['--bootstrap-server', bootstrap, '--reassignment-json-file', plan, '--verify'])
    expect(verify.stdout).toContain('Reassignment of partition moved-0 is completed.')
    expect(verify.stdout).toContain('Reassignment of partition moved-1 is completed.')
  })
})
