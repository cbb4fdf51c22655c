/**
 * close() is bounded like Java's close(Duration) (default 30 s; the group's part, commit +
 * listener + LeaveGroup, by min(timeout, requestTimeoutMs)), whatever the broker or a listener
 * does; and the failures of auto-commit, heartbeats and LeaveGroup are logged at warn.
 */
import { performance } from 'node:perf_hooks'
import { Admin, type Logger } from '@tidelog/client'
import { Consumer, type ConsumerOptions, type RebalanceListener } from '@tidelog/consumer'
import { describe, expect, it } from 'vitest'
import { cleanup, sleep, startTestBroker } from './helpers/broker.js'
import { waitFor } from './helpers/produce.js'

interface Logged {
  level: string
  msg: string
}

function capture(): { logger: Logger; logged: Logged[]; saw(level: string, msg: RegExp): boolean } {
  const logged: Logged[] = []
  const at = (level: string) => (_obj: object, msg?: string) => void logged.push({ level, msg: msg ?? '' })
  return {
    logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') },
    logged,
    saw: (level, msg) => logged.some((l) => l.level === level && msg.test(l.msg)),
  }
}

/** A group member that has read (and processed) everything of a 2-partition topic. */
async function readingMember(extra: Partial<ConsumerOptions> = {}, listener?: RebalanceListener) {
  const { broker, brokers, producer } = await startTestBroker(2)
  await producer.fill('bounded', 2, 10)
  const consumer = new Consumer({
    brokers,
    groupId: 'bounded-group',
    autoOffsetReset: 'earliest',
    autoCommitIntervalMs: 600_000,
    sessionTimeoutMs: 6000,
    heartbeatIntervalMs: 100,
    fetchMaxWaitMs: 50,
    ...extra,
  })
  let read = 0
  await consumer.subscribe(['bounded'], { listener })
  const run = (async () => {
    for await (const _ of consumer) read++
  })()
  cleanup(async () => {
    await consumer.close({ timeoutMs: 1000 })
    await run.catch(() => {})
  })
  await waitFor(() => read === 10, 10_000, 'everything read')
  await sleep(100) // the loop asks for the next message: all 10 count as processed
  return { broker, brokers, consumer }
}

async function timed(p: Promise<unknown>): Promise<number> {
  const t0 = performance.now()
  await p
  return performance.now() - t0
}

describe('close()', () => {
  it('returns within timeoutMs when the broker is gone (commit and LeaveGroup cannot be sent)', async () => {
    const { broker, consumer } = await readingMember()
    await broker.close()
    // Before: the commit retried for defaultApiTimeoutMs (60 s), then LeaveGroup for requestTimeoutMs.
    // The upper bounds leave room for a loaded machine; what matters is seconds, not a minute.
    const ms = await timed(consumer.close({ timeoutMs: 1000 }))
    expect(ms).toBeGreaterThanOrEqual(800)
    expect(ms).toBeLessThan(2500)
  }, 15_000)

  it('without timeoutMs bounds the group part by requestTimeoutMs, as Java does', async () => {
    const { broker, consumer } = await readingMember({ requestTimeoutMs: 1200 })
    await broker.close()
    const ms = await timed(consumer.close())
    expect(ms).toBeGreaterThanOrEqual(1000)
    expect(ms).toBeLessThan(2800)
  }, 15_000)

  it('returns at timeoutMs when the revocation listener never settles; the commit before it went through', async () => {
    const log = capture()
    const hang: RebalanceListener = { onPartitionsRevoked: () => new Promise<void>(() => {}) }
    const { brokers, consumer } = await readingMember({ logger: log.logger }, hang)
    const ms = await timed(consumer.close({ timeoutMs: 800 }))
    expect(ms).toBeGreaterThanOrEqual(700)
    expect(ms).toBeLessThan(2200)
    expect(log.saw('warn', /did not finish in time/)).toBe(true)
    const check = new Consumer({ brokers, groupId: 'bounded-group' })
    cleanup(() => check.close())
    const committed = await check.committed([0, 1].map((partition) => ({ topic: 'bounded', partition })))
    expect(committed.map((c) => c.offset)).toEqual([5n, 5n])
  }, 15_000)

  it('refuses a negative timeoutMs with a TypeError and stays open; Infinity waits for everything', async () => {
    const log = capture()
    const { brokers, consumer } = await readingMember({ logger: log.logger })
    await expect(consumer.close({ timeoutMs: -1 })).rejects.toThrow(TypeError)
    await consumer.commit()
    // No limit: Infinity must not be taken for "at once" by the timers (setTimeout would).
    await consumer.close({ timeoutMs: Infinity })
    expect(log.saw('warn', /did not finish in time|still busy/)).toBe(false)
    const admin = new Admin({ brokers })
    cleanup(() => admin.close())
    const [group] = await admin.describeGroups(['bounded-group'])
    expect(group!.members).toHaveLength(0)
  }, 15_000)

  it('reports a LeaveGroup the coordinator refuses (a fenced static member) at warn; the member that took over stays', async () => {
    const { brokers } = await startTestBroker(2)
    const admin = new Admin({ brokers })
    cleanup(() => admin.close())
    const log = capture()
    const member = (logger?: Logger) => {
      const c = new Consumer({ brokers, groupId: 'static-group', groupInstanceId: 'app-1', sessionTimeoutMs: 10_000, heartbeatIntervalMs: 5000, logger })
      cleanup(() => c.close({ timeoutMs: 1000 }))
      return c
    }
    const old = member(log.logger)
    await old.subscribe(['bounded'])
    await waitFor(() => old.generation !== undefined, 10_000, 'the first process joins')
    // A second process with the same instance id takes over (KIP-345): the first is fenced.
    const next = member()
    await next.subscribe(['bounded'])
    await waitFor(() => next.generation !== undefined, 10_000, 'the second process joins')
    // Before its next heartbeat (5 s) tells it, the fenced one closes, asking to leave.
    await old.close({ leaveGroup: true, commit: false, timeoutMs: 3000 })
    expect(log.saw('warn', /^LeaveGroup failed/)).toBe(true)
    const [group] = await admin.describeGroups(['static-group'])
    expect(group!.members.map((m) => m.memberId)).toEqual([next.generation!.memberId])
  }, 20_000)

  it('logs auto-commit, heartbeat and LeaveGroup failures at warn', async () => {
    const log = capture()
    const { broker, consumer } = await readingMember({ logger: log.logger, autoCommitIntervalMs: 300, defaultApiTimeoutMs: 600 })
    await broker.close()
    await waitFor(() => log.saw('warn', /^heartbeat failed/) && log.saw('warn', /^auto-commit failed/), 5000, 'heartbeat and auto-commit warnings')
    await consumer.close({ commit: false, timeoutMs: 1000 })
    await waitFor(() => log.saw('warn', /^LeaveGroup failed/), 2000, 'the LeaveGroup warning')
    expect(log.logged.filter((l) => /heartbeat failed|auto-commit failed|LeaveGroup failed/.test(l.msg)).every((l) => l.level === 'warn')).toBe(true)
  }, 15_000)
})
