/**
 * The exactly-once verifier with kill -9 (after Kafka's streams_eos_test), shared by the tidelog
 * broker's run (streams-eos-kill.test.ts) and Apache Kafka's (streams-kafka.test.ts, on the Kafka
 * that file already starts): the application runs in child processes that are killed -9 while
 * input flows; a read_committed reader must then see every input echoed exactly once and every
 * count and sum exactly right. TIDELOG_STREAMS_KILL_GUARANTEE=at_least_once runs the same kills
 * at-least-once: the verifier then finds duplicates (it can fail).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Admin } from '@tidelog/client'
import { Producer } from '@tidelog/producer'
import { expect } from 'vitest'
import { complete, expected, readOutputs, topicsOf, type Observed } from '../../packages/streams/test/helpers/eos-app.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const CHILD = fileURLToPath(new URL('../../packages/streams/test/helpers/eos-child.ts', import.meta.url))
const SOURCES = fileURLToPath(new URL('../../packages/streams/test/helpers/tsconfig.sources.json', import.meta.url))
const GUARANTEE = process.env['TIDELOG_STREAMS_KILL_GUARANTEE'] ?? 'exactly_once_v2'

interface App {
  child: ChildProcess
  states: string[]
  /** Changelog records restored, and applied to standby tasks, as of the last report. */
  restored: number
  standby: number
  stateDir: string
  ready: boolean
}

async function until(what: string, cond: () => boolean, deadlineMs = 60_000): Promise<void> {
  const end = Date.now() + deadlineMs
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

/** One broker's side of the verifier: its clients and the application processes it runs. */
export class KillVerifier {
  private readonly admin: Admin
  private readonly producer: Producer
  private readonly children = new Set<ChildProcess>()

  constructor(private readonly brokers: string[]) {
    this.admin = new Admin({ brokers })
    this.producer = new Producer({ brokers, lingerMs: 5 })
  }

  async close(): Promise<void> {
    for (const c of this.children) c.kill('SIGKILL')
    await this.producer.close()
    await this.admin.close()
  }

  /** A warm process (loaded, waiting on stdin) or a started one. */
  private startApp(prefix: string, appId: string, instance?: string, warm = false, extraEnv: Record<string, string> = {}): App {
    const stateDir = mkdtempSync(join(tmpdir(), 'tidelog-streams-kill-state-'))
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
      cwd: ROOT,
      env: { ...process.env, TSX_TSCONFIG_PATH: SOURCES, GUARANTEE, BROKERS: this.brokers.join(','), APP_ID: appId, PREFIX: prefix, STATE_DIR: stateDir, ...(instance ? { INSTANCE: instance } : {}), WAIT: warm ? '1' : '0', ...extraEnv },
      stdio: ['pipe', 'pipe', 'inherit'],
    })
    this.children.add(child)
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
    child.on('exit', () => this.children.delete(child))
    return app
  }

  private async go(app: App): Promise<App> {
    await until('the replacement process to load', () => app.ready)
    app.child.stdin!.write('start\n')
    return app
  }

  private async kill9(app: App): Promise<void> {
    const gone = new Promise((r) => app.child.once('exit', r))
    app.child.kill('SIGKILL')
    await gone
    rmSync(app.stateDir, { recursive: true, force: true })
  }

  private async stop(app: App): Promise<void> {
    const gone = new Promise<number | null>((r) => app.child.once('exit', (code) => r(code)))
    app.child.kill('SIGTERM')
    expect(await gone).toBe(0)
    rmSync(app.stateDir, { recursive: true, force: true })
  }

  /** Input flowing in the background: `total` records, keys k0..k9, values 0.. in order, in small sends. */
  private feed(prefix: string, total: number): { sent: { key: string; value: number }[]; done: Promise<void> } {
    const sent: { key: string; value: number }[] = []
    const done = (async () => {
      for (let i = 0; i < total; i += 20) {
        const chunk = Array.from({ length: Math.min(20, total - i) }, (_, j) => ({ key: `k${(i + j) % 10}`, value: i + j }))
        const b = (n: number) => {
          const x = Buffer.alloc(8)
          x.writeBigInt64BE(BigInt(n))
          return x
        }
        await this.producer.send(chunk.map((r) => ({ topic: topicsOf(prefix).data, key: r.key, value: b(r.value) })))
        sent.push(...chunk)
        await new Promise((r) => setTimeout(r, 10))
      }
    })()
    return { sent, done }
  }

  private assertExact(seen: Observed, sent: readonly { key: string; value: number }[]): void {
    const dupes = [...seen.echo].filter(([, n]) => n !== 1)
    expect(dupes).toEqual([])
    expect(seen.echoed).toBe(sent.length)
    expect(seen.counts).toEqual(expected(sent).counts)
    expect(seen.sums).toEqual(expected(sent).sums)
  }

  private async createTopics(prefix: string): Promise<void> {
    const t = topicsOf(prefix)
    await this.admin.createTopics([t.data, t.echo, t.counts, t.sums].map((name) => ({ name, partitions: 2 })))
  }

  /**
   * Two instances; one killed -9 (the survivor takes over its tasks and restores their state) and
   * restarted while input flows; with `twice`, killed -9 and restarted again (a static member
   * coming back before its session timed out).
   */
  async killAndRestart(prefix: string, { total = 1600, twice = true }: { total?: number; twice?: boolean } = {}): Promise<void> {
    await this.createTopics(prefix)
    let a = this.startApp(prefix, `${prefix}-app`, `${prefix}-a`)
    const b = this.startApp(prefix, `${prefix}-app`, `${prefix}-b`)
    await until('both instances to run', () => a.states.includes('RUNNING') && b.states.includes('RUNNING'))
    const input = this.feed(prefix, total)

    let next = this.startApp(prefix, `${prefix}-app`, `${prefix}-a`, true)
    await until('300 records sent', () => input.sent.length >= 300)
    const mark = b.states.length
    await this.kill9(a)
    // The survivor notices when the dead member's session times out, rebalances and runs every task.
    await until('the survivor to rebalance', () => b.states.slice(mark).includes('REBALANCING'))
    await until('the survivor to run all tasks', () => b.states[b.states.length - 1] === 'RUNNING')

    a = await this.go(next)
    await until('the restarted instance to run', () => a.states.includes('RUNNING'))
    if (twice) {
      next = this.startApp(prefix, `${prefix}-app`, `${prefix}-a`, true)
      await until(`${Math.round((total * 7) / 16)} records sent`, () => input.sent.length >= Math.round((total * 7) / 16))
      // Static membership (KIP-345): the restarted instance takes its own tasks back without waiting for a session timeout.
      await this.kill9(a)
      a = await this.go(next)
      await until('the instance restarted again to run', () => a.states.includes('RUNNING'))
    }

    await input.done
    const seen = await readOutputs(this.brokers, prefix, 2, (o) => complete(o, input.sent), 60_000)
    this.assertExact(seen, input.sent)
    await Promise.all([this.stop(a), this.stop(b)])
  }

  /** Three instances with num.standby.replicas=1; one killed -9: its tasks go to the standbys. Returns the records restored after the kill. */
  async killWithStandbys(prefix: string): Promise<number> {
    await this.createTopics(prefix)
    const standbys = { STANDBYS: '1' }
    const apps = [0, 1, 2].map(() => this.startApp(prefix, `${prefix}-app`, undefined, false, standbys))
    await until('all three instances to run', () => apps.every((x) => x.states[x.states.length - 1] === 'RUNNING'))
    const input = this.feed(prefix, 900)
    await until('300 records sent', () => input.sent.length >= 300)
    // The standbys have been reading the changelogs all along.
    await until('the standbys to have applied changelog records', () => apps.some((x) => x.standby > 0))
    const [dead, ...survivors] = apps as [App, App, App]
    const before = survivors.map((x) => ({ mark: x.states.length, restored: x.restored }))
    await this.kill9(dead)
    await until('the survivors to rebalance and run', () => survivors.every((x, i) => x.states.slice(before[i]!.mark).includes('REBALANCING') && x.states[x.states.length - 1] === 'RUNNING'))
    await input.done
    const seen = await readOutputs(this.brokers, prefix, 2, (o) => complete(o, input.sent), 60_000)
    this.assertExact(seen, input.sent)
    const restoredAfterKill = survivors.reduce((n, x, i) => n + x.restored - before[i]!.restored, 0)
    await Promise.all(survivors.map((x) => this.stop(x)))
    return restoredAfterKill
  }
}
