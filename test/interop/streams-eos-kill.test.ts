import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startBroker, type Broker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
import { Producer } from '@tidelog/producer'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { complete, expected, readOutputs, topicsOf, type Observed } from '../../packages/streams/test/helpers/eos-app.js'

/**
 * The exactly-once verifier (after Kafka's streams_eos_test): the application runs in child
 * processes that are killed -9 while input flows; a read_committed reader must then see every
 * input echoed exactly once and every count and sum exactly right. On the tidelog broker (in
 * this process); it is here rather than in npm test because its child processes, a 6 s session
 * timeout and the killed producers' transaction timeouts make it take 20-30 s.
 * TIDELOG_STREAMS_KILL_GUARANTEE=at_least_once runs the same kills at-least-once: the verifier
 * then finds duplicates (it can fail).
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const CHILD = fileURLToPath(new URL('../../packages/streams/test/helpers/eos-child.ts', import.meta.url))
const SOURCES = fileURLToPath(new URL('../../packages/streams/test/helpers/tsconfig.sources.json', import.meta.url))

let broker: Broker
let dataDir: string
let brokers: string[]
let admin: Admin
let producer: Producer
const children = new Set<ChildProcess>()

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tidelog-streams-kill-'))
  broker = await startBroker({ port: 0, dataDir, transactionAbortTimedOutTransactionCleanupIntervalMs: 250 })
  brokers = [`127.0.0.1:${broker.port}`]
  admin = new Admin({ brokers })
  producer = new Producer({ brokers, lingerMs: 5 })
})

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL')
  await producer?.close()
  await admin?.close()
  await broker?.close()
  rmSync(dataDir, { recursive: true, force: true })
})

interface App {
  child: ChildProcess
  states: string[]
  /** Changelog records restored, and applied to standby tasks, as of the last state change. */
  restored: number
  standby: number
  stateDir: string
  ready: boolean
}

/** A warm process (loaded, waiting on stdin) or a started one. */
function startApp(prefix: string, appId: string, instance?: string, warm = false, extraEnv: Record<string, string> = {}): App {
  const stateDir = mkdtempSync(join(tmpdir(), 'tidelog-streams-kill-state-'))
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
    cwd: ROOT,
    env: { ...process.env, TSX_TSCONFIG_PATH: SOURCES, GUARANTEE, BROKERS: brokers.join(','), APP_ID: appId, PREFIX: prefix, STATE_DIR: stateDir, ...(instance ? { INSTANCE: instance } : {}), WAIT: warm ? '1' : '0', ...extraEnv },
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  children.add(child)
  const app: App = { child, states: [], restored: 0, standby: 0, stateDir, ready: false }
  let buf = ''
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString()
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i)
      buf = buf.slice(i + 1)
      if (line.startsWith('state ')) app.states.push(line.slice(6))
      if (line === 'ready') app.ready = true
      const r = /^restored (\d+) (\d+)$/.exec(line)
      if (r) [app.restored, app.standby] = [Number(r[1]), Number(r[2])]
    }
  })
  child.on('exit', () => children.delete(child))
  return app
}

async function until(what: string, cond: () => boolean, deadlineMs = 60_000): Promise<void> {
  const end = Date.now() + deadlineMs
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

async function go(app: App): Promise<App> {
  await until('the replacement process to load', () => app.ready)
  app.child.stdin!.write('start\n')
  return app
}

async function kill9(app: App): Promise<void> {
  const gone = new Promise((r) => app.child.once('exit', r))
  app.child.kill('SIGKILL')
  await gone
  rmSync(app.stateDir, { recursive: true, force: true })
}

async function stop(app: App): Promise<void> {
  const gone = new Promise<number | null>((r) => app.child.once('exit', (code) => r(code)))
  app.child.kill('SIGTERM')
  expect(await gone).toBe(0)
  rmSync(app.stateDir, { recursive: true, force: true })
}

/** Input flowing in the background: `total` records, keys k0..k9, values 0.. in order, in small sends. */
function feed(prefix: string, total: number): { sent: { key: string; value: number }[]; done: Promise<void> } {
  const sent: { key: string; value: number }[] = []
  const done = (async () => {
    for (let i = 0; i < total; i += 20) {
      const chunk = Array.from({ length: Math.min(20, total - i) }, (_, j) => ({ key: `k${(i + j) % 10}`, value: i + j }))
      const b = (n: number) => {
        const x = Buffer.alloc(8)
        x.writeBigInt64BE(BigInt(n))
        return x
      }
      await producer.send(chunk.map((r) => ({ topic: topicsOf(prefix).data, key: r.key, value: b(r.value) })))
      sent.push(...chunk)
      await new Promise((r) => setTimeout(r, 10))
    }
  })()
  return { sent, done }
}

function assertExact(seen: Observed, sent: readonly { key: string; value: number }[]): void {
  const dupes = [...seen.echo].filter(([, n]) => n !== 1)
  expect(dupes).toEqual([])
  expect(seen.echoed).toBe(sent.length)
  expect(seen.counts).toEqual(expected(sent).counts)
  expect(seen.sums).toEqual(expected(sent).sums)
}

async function createTopics(prefix: string): Promise<void> {
  const t = topicsOf(prefix)
  await admin.createTopics([t.data, t.echo, t.counts, t.sums].map((name) => ({ name, partitions: 2 })))
}

const GUARANTEE = process.env['TIDELOG_STREAMS_KILL_GUARANTEE'] ?? 'exactly_once_v2'

describe('exactly_once_v2 with instances killed -9 (tidelog broker)', () => {
  it('two instances; one killed -9 (the survivor takes over its tasks and restores their state), restarted, killed -9 and restarted again while input flows: every result exactly once', async () => {
    await createTopics('k1')
    let a = startApp('k1', 'k1-app', 'k1-a')
    const b = startApp('k1', 'k1-app', 'k1-b')
    await until('both instances to run', () => a.states.includes('RUNNING') && b.states.includes('RUNNING'))
    const input = feed('k1', 1600)

    let next = startApp('k1', 'k1-app', 'k1-a', true)
    await until('300 records sent', () => input.sent.length >= 300)
    const mark = b.states.length
    await kill9(a)
    // The survivor notices when the dead member's session times out, rebalances and runs every task.
    await until('the survivor to rebalance', () => b.states.slice(mark).includes('REBALANCING'))
    await until('the survivor to run all tasks', () => b.states[b.states.length - 1] === 'RUNNING')

    a = await go(next)
    await until('the restarted instance to run', () => a.states.includes('RUNNING'))
    next = startApp('k1', 'k1-app', 'k1-a', true)
    await until('700 records sent', () => input.sent.length >= 700)
    // Static membership (KIP-345): the restarted instance takes its own tasks back without waiting for a session timeout.
    await kill9(a)
    a = await go(next)
    await until('the instance restarted again to run', () => a.states.includes('RUNNING'))

    await input.done
    const seen = await readOutputs(brokers, 'k1', 2, (o) => complete(o, input.sent), 60_000)
    assertExact(seen, input.sent)
    await Promise.all([stop(a), stop(b)])
  }, 120_000)

  it('three instances with num.standby.replicas=1; one killed -9: its tasks go to the standbys, which restore (almost) nothing, and every result is exact', async () => {
    await createTopics('k3')
    const standbys = { STANDBYS: '1' }
    const apps = ['k3-a', 'k3-b', 'k3-c'].map(() => startApp('k3', 'k3-app', undefined, false, standbys))
    await until('all three instances to run', () => apps.every((x) => x.states[x.states.length - 1] === 'RUNNING'))
    const input = feed('k3', 900)
    await until('300 records sent', () => input.sent.length >= 300)
    // The standbys have been reading the changelogs all along.
    await until('the standbys to have applied changelog records', () => apps.some((x) => x.standby > 0))
    const [dead, ...survivors] = apps as [App, App, App]
    const before = survivors.map((x) => ({ mark: x.states.length, restored: x.restored }))
    await kill9(dead)
    await until('the survivors to rebalance and run', () => survivors.every((x, i) => x.states.slice(before[i]!.mark).includes('REBALANCING') && x.states[x.states.length - 1] === 'RUNNING'))
    await input.done
    const seen = await readOutputs(brokers, 'k3', 2, (o) => complete(o, input.sent), 60_000)
    assertExact(seen, input.sent)
    // A full restore of the dead instance's stateful tasks would read at least the ~150 changelog records each had at the kill.
    const restoredAfterKill = survivors.reduce((n, x, i) => n + x.restored - before[i]!.restored, 0)
    expect(restoredAfterKill).toBeLessThan(30)
    await Promise.all(survivors.map((x) => stop(x)))
  }, 90_000)
})
