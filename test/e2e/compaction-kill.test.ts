import { type ChildProcess, spawn } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startBroker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'
import { Producer } from '@tidelog/producer'
import { afterAll, describe, expect, it } from 'vitest'

// A broker in a child process is killed with SIGKILL while its cleaner works
// (at a seeded random moment: before, during or between segment swaps, inside
// the worker's writes), then started again on the same data directory: every
// key's latest value is the one last produced, no offset appears twice, and
// every record read was produced with that offset, key and value.

// The built CLI (npm test builds first): it starts in a second where tsx takes several on a
// loaded machine, and it runs the cleaner's worker from dist/ as users get it.
const MAIN = fileURLToPath(new URL('../../apps/broker/dist/main.js', import.meta.url))
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const TOPIC = 'kill'
const KEYS = 300
const RECORDS = 6_000
// The cleaner is throttled so a pass over the ~0.7 MiB log spans a second or two of swaps.
const CLEANER_RATE = 1_000_000

const dirs: string[] = []
const children: ChildProcess[] = []
afterAll(() => {
  for (const c of children) c.kill('SIGKILL')
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'tidelog-compaction-kill-'))
  dirs.push(d)
  return d
}

/** mulberry32: the kill moments repeat from the seed. */
function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

type Row = [offset: number, key: string, value: string | null]

/** Writes the keyed workload through a broker whose cleaner is off; returns every record produced. */
async function prepare(dataDir: string): Promise<Row[]> {
  const broker = await startBroker({ port: 0, dataDir, logCleanerEnable: false, logLevel: 'error' })
  const brokers = [`127.0.0.1:${broker.port}`]
  const admin = new Admin({ brokers })
  const producer = new Producer({ brokers, lingerMs: 5 })
  try {
    await admin.createTopics([
      { name: TOPIC, partitions: 1, configs: { 'cleanup.policy': 'compact', 'internal.segment.bytes': '16384', 'min.cleanable.dirty.ratio': '0.01', 'delete.retention.ms': '86400000' } },
    ])
    const pad = 'x'.repeat(80)
    const sends: Promise<Row>[] = []
    for (let i = 0; i < RECORDS; i++) {
      const key = `k${(i * 7919) % KEYS}`
      const value = i % 17 === 0 ? null : `${i}-${pad}`
      sends.push(producer.send({ topic: TOPIC, partition: 0, key, value }).then((m) => [Number(m.offset), key, value]))
    }
    return await Promise.all(sends)
  } finally {
    await producer.close()
    await admin.close()
    await broker.close()
  }
}

/** Starts the CLI on the data directory; resolves once it listens. */
async function launch(dataDir: string): Promise<ChildProcess> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: build the broker first (npx turbo run build)`)
  const child = spawn(
    process.execPath,
    [MAIN, '--port', '0', '--data-dir', dataDir, '--log-level', 'warn', '--log-cleaner-backoff-ms', '0', '--log-cleaner-io-max-bytes-per-second', String(CLEANER_RATE)],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  )
  children.push(child)
  await new Promise<void>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      if (/listening on/.test(out)) resolve()
    })
    child.once('exit', (code) => reject(new Error(`broker exited with ${code}`)))
  })
  return child
}

async function readAll(dataDir: string, through: number): Promise<Row[]> {
  const broker = await startBroker({ port: 0, dataDir, logCleanerEnable: false, logLevel: 'error' })
  const consumer = new Consumer({ brokers: [`127.0.0.1:${broker.port}`], autoOffsetReset: 'earliest', fetchMaxWaitMs: 50 })
  try {
    consumer.assign([{ topic: TOPIC, partition: 0 }])
    const out: Row[] = []
    for await (const m of consumer) {
      out.push([Number(m.offset), m.key!.toString(), m.value === null ? null : m.value.toString()])
      if (Number(m.offset) >= through) break
    }
    return out
  } finally {
    await consumer.close()
    await broker.close()
  }
}

describe('kill -9 while the log cleaner runs', () => {
  it('a broker killed at seeded random moments of cleaning restarts with the latest value of every key, no offset twice', async () => {
    const prepared = tmp()
    const produced = await prepare(prepared)
    const byOffset = new Map(produced.map((r) => [r[0], r]))
    const latest = new Map<string, Row>()
    for (const r of [...produced].sort((a, b) => a[0] - b[0])) latest.set(r[1], r)
    const last = Math.max(...produced.map((r) => r[0]))
    const random = rng(Number(process.env.TIDELOG_KILL_SEED ?? 12))
    const sizes: number[] = []
    for (let run = 0; run < 3; run++) {
      const dataDir = tmp()
      cpSync(prepared, dataDir, { recursive: true })
      const partition = join(dataDir, `${TOPIC}-0`)
      const child = await launch(dataDir)
      // Once the worker writes its first cleaned group the swaps have begun; they take a couple of
      // seconds throttled: the kill lands at a random moment among them.
      const deadline = Date.now() + 60_000
      while (!readdirSync(partition).some((f) => f.endsWith('.cleaned') || f.endsWith('.swap'))) {
        if (Date.now() > deadline) throw new Error('the cleaner never started a swap')
        await new Promise((r) => setTimeout(r, 5))
      }
      await new Promise((r) => setTimeout(r, Math.floor(random() * 1200)))
      const exited = new Promise((r) => child.once('exit', r))
      child.kill('SIGKILL')
      await exited

      const seen = await readAll(dataDir, last)
      sizes.push(seen.length)
      const offsets = seen.map((r) => r[0])
      expect(new Set(offsets).size, `run ${run}`).toBe(offsets.length)
      expect(offsets, `run ${run}`).toEqual([...offsets].sort((a, b) => a - b))
      for (const r of seen) expect(byOffset.get(r[0]), `run ${run}: offset ${r[0]}`).toEqual(r)
      const after = new Map<string, Row>()
      for (const r of seen) after.set(r[1], r)
      expect(after, `run ${run}`).toEqual(latest)
      // The start that read it finished or dropped whatever swap the kill interrupted.
      expect(readdirSync(partition).filter((f) => f.endsWith('.swap') || f.endsWith('.cleaned')), `run ${run}`).toEqual([])
    }
    // What was left ranges from the whole log to (nearly) its compacted form; never less than one record a key.
    for (const n of sizes) {
      expect(n).toBeGreaterThanOrEqual(KEYS)
      expect(n).toBeLessThanOrEqual(RECORDS)
    }
  })
})
