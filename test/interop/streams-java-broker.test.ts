/**
 * Apache Kafka Streams (Java, 4.4) as a real application on the tidelog broker: a word count
 * through a repartition topic into a compacted changelog, a windowed count (compact,delete
 * changelog) and a stream-table join, all exactly_once_v2 over the classic group protocol with
 * Streams' own partition assignor. Input comes from our producer, output is read by our
 * read_committed consumer; the app is killed -9 in the middle of the stream and restarted, and
 * every result must still be exact (no duplicate, no gap in any count sequence).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { startBroker, type Broker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
import { Producer } from '@tidelog/producer'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { peerUnavailable } from '../helpers/kafka.js'
import { recordsPeers } from '../helpers/peers.js'
import { readToEnd } from '../helpers/read-to-end.js'
import { STREAMS_VERSION, fetchKafkaStreams } from '../streams-java/golden.js'

const run = promisify(execFile)
const SOURCE = fileURLToPath(new URL('../streams-java/BrokerApp.java', import.meta.url))
const javaBin = (tool: 'java' | 'javac') => (process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', tool) : tool)
const APP = 'jsb-app'
const PARTITIONS = 3
const WORDS = ['kafka', 'streams', 'tide', 'log', 'broker', 'topic', 'table', 'join', 'window', 'count', 'state', 'store']
const REGIONS = ['eu', 'us', 'apac']
const LINES = 600
const CLICKS = 200
const USERS = 8
const AT_LEAST_ONCE = process.env['TIDELOG_JSB_GUARANTEE'] === 'at_least_once'

/** The kafka-clients version inside the kafka-streams jar folder (what the app's JVM loads). */
function clientsVersion(libs: string): string {
  const jar = readdirSync(libs).find((f) => /^kafka-clients-\d.*\.jar$/.test(f))
  if (!jar) throw new Error(`no kafka-clients jar in ${libs}`)
  return jar.slice('kafka-clients-'.length, -'.jar'.length)
}

interface App {
  child: ChildProcess
  states: string[]
  seen: number
  loaded: boolean
  output: string[]
}

let broker: Broker
let dataDir: string
let brokers: string[]
let admin: Admin
let producer: Producer
let classes: string
let libs: string
let skip: string | undefined
let peerVersion: string | undefined
const children = new Set<ChildProcess>()

/** A started app, or with `warm` a loaded one that starts when go() tells it to. */
function startApp(stateDir: string, commitIntervalMs: number, warm = false): App {
  const child = spawn(
    javaBin('java'),
    ['-Xms64m', '-Xmx384m', '-XX:TieredStopAtLevel=1', '-cp', `${classes}:${libs}/*`, 'BrokerApp', brokers.join(','), APP, stateDir, 'jsb-instance-1', String(commitIntervalMs), ...(warm ? ['wait'] : [])],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  )
  children.add(child)
  const app: App = { child, states: [], seen: 0, loaded: false, output: [] }
  let buf = ''
  const onData = (d: Buffer) => {
    buf += d.toString()
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i)
      buf = buf.slice(i + 1)
      if (line.startsWith('SEEN ')) app.seen = Number(line.slice(5))
      else if (line === 'LOADED') app.loaded = true
      else {
        if (line.startsWith('STATE ')) app.states.push(line.slice(6))
        app.output.push(line)
      }
    }
  }
  child.stdout!.on('data', onData)
  child.stderr!.on('data', (d: Buffer) => app.output.push(d.toString()))
  child.on('exit', () => children.delete(child))
  return app
}

async function until(what: string, cond: () => boolean | Promise<boolean>, app?: App, deadlineMs = 90_000): Promise<void> {
  const end = Date.now() + deadlineMs
  while (!(await cond())) {
    if (app?.states.includes('ERROR') || app?.child.exitCode !== null && app?.child.exitCode !== undefined) {
      throw new Error(`the Streams app failed while waiting for ${what}:\n${app.output.slice(-60).join('\n')}`)
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${app ? `:\n${app.output.slice(-60).join('\n')}` : ''}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

async function go(app: App): Promise<App> {
  await until('the replacement to load', () => app.loaded, app)
  app.child.stdin!.write('go\n')
  return app
}

async function kill9(app: App): Promise<void> {
  const gone = new Promise((r) => app.child.once('exit', r))
  app.child.kill('SIGKILL')
  await gone
}

async function stop(app: App): Promise<void> {
  const gone = new Promise<number | null>((r) => app.child.once('exit', (code) => r(code)))
  app.child.stdin!.end()
  expect(await gone).toBe(0)
}

const base = Math.floor(Date.now() / 10_000) * 10_000 - 60_000
const lineAt = (i: number) => ({ key: `line-${i}`, words: [0, 1, 2].map((j) => WORDS[(i * 7 + j * 5 + (i >> 3)) % WORDS.length]!), timestamp: base + i * 50 })
const userRegion = (u: number) => REGIONS[u % REGIONS.length]!
const clickAt = (i: number) => ({ user: `u${(i * 3) % USERS}`, page: `page-${i}`, timestamp: base + LINES * 50 + i * 10 })

/** Sends lines and clicks [from, to) in small chunks, so the stream is still flowing when the app is killed. */
async function feed(from: number, to: number): Promise<void> {
  for (let i = from; i < to; i += 20) {
    const n = Math.min(20, to - i)
    const records = Array.from({ length: n }, (_, j) => {
      const l = lineAt(i + j)
      return { topic: 'jsb-lines', key: l.key, value: l.words.join(' '), timestamp: l.timestamp }
    })
    const clicks = Array.from({ length: n }, (_, j) => i + j)
      .filter((k) => k % 3 === 0 && k / 3 < CLICKS)
      .map((k) => clickAt(k / 3))
      .map((c) => ({ topic: 'jsb-clicks', key: c.user, value: c.page, timestamp: c.timestamp }))
    await producer.send([...records, ...clicks])
    await new Promise((r) => setTimeout(r, 5))
  }
}

/** What a correct run outputs: every key's full update sequence "key=1".."key=n" (no cache), and one join result per click. */
function expected(): { counts: Map<string, number>; windowed: Map<string, number>; joined: string[] } {
  const counts = new Map<string, number>()
  const windowed = new Map<string, number>()
  for (let i = 0; i < LINES; i++) {
    const l = lineAt(i)
    for (const w of l.words) {
      counts.set(w, (counts.get(w) ?? 0) + 1)
      const wk = `${w}@${Math.floor(l.timestamp / 10_000) * 10_000}`
      windowed.set(wk, (windowed.get(wk) ?? 0) + 1)
    }
  }
  const joined = Array.from({ length: CLICKS }, (_, i) => clickAt(i)).map((c) => `${c.user}:${c.page}@${userRegion(Number(c.user.slice(1)))}`)
  return { counts, windowed, joined }
}

/** Values per key in the order they were written (each key lives on one partition). */
function sequences(values: string[]): Map<string, number[]> {
  const out = new Map<string, number[]>()
  for (const v of values) {
    const at = v.lastIndexOf('=')
    const key = v.slice(0, at)
    out.set(key, [...(out.get(key) ?? []), Number(v.slice(at + 1))])
  }
  return out
}

const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1)
const committed = async (topic: string) => (await readToEnd(brokers, topic, PARTITIONS, { isolationLevel: 'read_committed' })).flat().map((r) => r.value)

beforeAll(async () => {
  // javac runs while the broker starts.
  const compiled = (async () => {
    libs = await fetchKafkaStreams(STREAMS_VERSION)
    peerVersion = clientsVersion(libs)
    classes = mkdtempSync(join(tmpdir(), 'tidelog-jsb-javac-'))
    await run(javaBin('javac'), ['-nowarn', '-cp', `${libs}/*`, '-d', classes, SOURCE], { timeout: 120_000 })
  })().catch((e: unknown) => {
    skip = peerUnavailable(`Kafka Streams ${STREAMS_VERSION}`, e) as string
  })
  dataDir = mkdtempSync(join(tmpdir(), 'tidelog-jsb-'))
  broker = await startBroker({ port: 0, dataDir, logLevel: 'warn' })
  brokers = [`127.0.0.1:${broker.port}`]
  admin = new Admin({ brokers })
  producer = new Producer({ brokers, lingerMs: 2 })
  await compiled
}, 180_000)

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL')
  await producer?.close()
  await admin?.close()
  await broker?.close()
  rmSync(dataDir, { recursive: true, force: true })
  if (classes) rmSync(classes, { recursive: true, force: true })
})

describe(`Kafka Streams ${STREAMS_VERSION} (Java) on the tidelog broker`, () => {
  recordsPeers(() => (peerVersion ? [{ peer: 'Java client', version: peerVersion }] : undefined))

  it('word count (repartition + compacted changelog), windowed count (compact,delete changelog) and a stream-table join, exactly_once_v2, killed -9 mid-stream and restarted: every result exact', async (ctx) => {
    if (skip) return ctx.skip()
    await admin.createTopics(['jsb-lines', 'jsb-clicks', 'jsb-users', 'jsb-word-counts', 'jsb-windowed-counts', 'jsb-joined'].map((name) => ({ name, partitions: PARTITIONS })))
    // The table first, with earlier timestamps: Streams joins each click against it.
    await producer.send(Array.from({ length: USERS }, (_, u) => ({ topic: 'jsb-users', key: `u${u}`, value: userRegion(u), timestamp: base - 1000 })))
    const half = LINES / 2
    await feed(0, half)

    const stateDir = mkdtempSync(join(tmpdir(), 'tidelog-jsb-state-'))
    try {
      // The first process commits only every 30 s: everything it outputs stays in an open
      // transaction, and it is killed once that is on the broker (high watermark past the last
      // stable offset), so the restart must abort it and redo the work.
      let app = startApp(stateDir, 30_000)
      await until('the app to run', () => app.states.includes('RUNNING'), app)
      await until('the first half to be processed', () => app.seen >= half + Math.ceil(half / 3), app)
      // Same state dir: the same process id, so the same transactional.id fences the dead producer.
      const next = startApp(stateDir, 200, true)
      // The join's output: the counts are behind the repartition topic, which their
      // read_committed sub-topology reads only once the transaction commits.
      await until('an open transaction with output on the broker', async () => {
        const [hw, lso] = await Promise.all([admin.listOffsets('jsb-joined', 'latest'), admin.listOffsets('jsb-joined', 'latest', { isolationLevel: 'read_committed' })])
        // at_least_once (TIDELOG_JSB_GUARANTEE, to see this test fail) has no transaction: any output will do.
        const floor = (p: { partition: number }) => (AT_LEAST_ONCE ? 0n : lso.find((l) => l.partition === p.partition)!.offset)
        return hw.some((p) => p.offset > floor(p))
      }, app)
      await kill9(app)
      const more = feed(half, LINES)
      app = await go(next)
      await more
      const want = expected()
      const totalCounts = [...want.counts.values()].reduce((a, b) => a + b, 0)
      const totalWindowed = [...want.windowed.values()].reduce((a, b) => a + b, 0)
      let counts: string[] = []
      let windowed: string[] = []
      let joined: string[] = []
      // The three outputs are awaited together: each read is a fresh read_committed consumer.
      await Promise.all([
        until('every word to be counted', async () => (counts = await committed('jsb-word-counts')).length >= totalCounts, app),
        until('every window to be counted', async () => (windowed = await committed('jsb-windowed-counts')).length >= totalWindowed, app),
        until('every click to be joined', async () => (joined = await committed('jsb-joined')).length >= CLICKS, app),
      ])

      expect(counts).toHaveLength(totalCounts)
      expect(Object.fromEntries(sequences(counts))).toEqual(Object.fromEntries([...want.counts].map(([w, n]) => [w, upTo(n)])))
      expect(windowed).toHaveLength(totalWindowed)
      expect(Object.fromEntries(sequences(windowed))).toEqual(Object.fromEntries([...want.windowed].map(([w, n]) => [w, upTo(n)])))
      expect(joined.sort()).toEqual([...want.joined].sort())
      // The killed process's output is in the log, aborted: read_uncommitted sees it, read_committed did not.
      const uncommitted = (await readToEnd(brokers, 'jsb-joined', PARTITIONS, { isolationLevel: 'read_uncommitted' })).flat()
      expect(uncommitted.length).toBeGreaterThan(joined.length)

      // The internal topics Streams created (InternalTopicManager), with the configs it asked for:
      // the windowed changelog keeps the store's retention (size + grace) plus
      // windowstore.changelog.additional.retention.ms (1 day).
      const internal = {
        [`${APP}-by-word-repartition`]: { 'cleanup.policy': 'delete', 'retention.ms': '-1', 'segment.bytes': '52428800', 'message.timestamp.type': 'CreateTime' },
        [`${APP}-word-counts-changelog`]: { 'cleanup.policy': 'compact', 'message.timestamp.type': 'CreateTime' },
        [`${APP}-windowed-counts-changelog`]: { 'cleanup.policy': 'compact,delete', 'retention.ms': String(10_000 + 3_600_000 + 86_400_000), 'message.timestamp.type': 'CreateTime' },
        [`${APP}-users-store-changelog`]: { 'cleanup.policy': 'compact', 'message.timestamp.type': 'CreateTime' },
      }
      const described = await admin.describeConfigs(Object.entries(internal).map(([name, want]) => ({ type: 'topic' as const, name, keys: Object.keys(want) })))
      expect(Object.fromEntries(described.map((r) => [r.name, Object.fromEntries(r.configs.map((c) => [c.name, c.value]))]))).toEqual(internal)
      const topics = await admin.describeTopics(Object.keys(internal))
      expect(topics.map((t) => t.partitions.length)).toEqual(Object.keys(internal).map(() => PARTITIONS))
      // Streams purges the repartition records it has committed past (DeleteRecords).
      await until('the repartition topic to be purged', async () => {
        const earliest = await admin.listOffsets(`${APP}-by-word-repartition`, 'earliest')
        return earliest.some((p) => p.offset > 0n)
      }, app)
      await stop(app)
    } finally {
      rmSync(stateDir, { recursive: true, force: true })
    }
  }, 240_000)
})
