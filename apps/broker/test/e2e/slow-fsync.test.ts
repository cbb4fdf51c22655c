import { monitorEventLoopDelay } from 'node:perf_hooks'
import { type Consumer, Kafka, logLevel } from 'kafkajs'
import { afterEach, describe, expect, it } from 'vitest'
import { startBroker } from '../../src/index.js'
import { faultyFs } from '../helpers/faulty-fs.js'
import { tempDir } from '../helpers/tmp.js'

const cleanup: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f().catch(() => {})
})

const PRODUCE_MS = 6000
const FSYNC_MS = 200

describe('a slow disk does not stall the event loop', () => {
  it(`keeps answering heartbeats while every acks=all produce waits for a ${FSYNC_MS} ms fsync`, async () => {
    const fs = faultyFs({ fsyncDelayMs: FSYNC_MS })
    const b = await startBroker({ port: 0, dataDir: tempDir(), fs, flushMessages: 1, segmentBytes: 4096, groups: { initialRebalanceDelayMs: 300 } })
    cleanup.push(() => b.close())
    const kafka = new Kafka({ clientId: 'slow-disk', brokers: [`127.0.0.1:${b.port}`], logLevel: logLevel.NOTHING, retry: { retries: 3, initialRetryTime: 100 } })
    const admin = kafka.admin()
    await admin.connect()
    cleanup.push(() => admin.disconnect())
    await admin.createTopics({ topics: [{ topic: 'load', numPartitions: 4 }] })

    const joins: string[] = []
    const heartbeats = new Map<string, number>()
    const crashes: unknown[] = []
    const consumers: Consumer[] = []
    for (let i = 0; i < 2; i++) {
      const c = kafka.consumer({ groupId: 'slow', sessionTimeout: 6000, heartbeatInterval: 500, maxWaitTimeInMs: 100 })
      c.on(c.events.GROUP_JOIN, (e) => joins.push(e.payload.memberId))
      c.on(c.events.HEARTBEAT, (e) => heartbeats.set(e.payload.memberId, (heartbeats.get(e.payload.memberId) ?? 0) + 1))
      c.on(c.events.CRASH, (e) => crashes.push(e.payload.error))
      await c.connect()
      cleanup.push(() => c.disconnect())
      await c.subscribe({ topic: 'load', fromBeginning: true })
      await c.run({ eachMessage: async () => {} })
      consumers.push(c)
    }
    const deadline = Date.now() + 15_000
    while (new Set(joins).size < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    // Both members in one generation: from here on, any join is a rebalance.
    await new Promise((r) => setTimeout(r, 1000))
    const joinsBefore = joins.length

    const producer = kafka.producer()
    await producer.connect()
    cleanup.push(() => producer.disconnect())
    const latencies: number[] = []
    const delay = monitorEventLoopDelay({ resolution: 10 })
    delay.enable()
    const end = Date.now() + PRODUCE_MS
    const heartbeatsBefore = new Map(heartbeats)
    // Meanwhile topics are created (topics.json rewrites) and segments roll (snapshots, directory fsyncs).
    const creating = (async () => {
      for (let i = 0; Date.now() < end - 1000; i++) {
        await admin.createTopics({ topics: [{ topic: `side-${i}`, numPartitions: 2 }] })
        await new Promise((r) => setTimeout(r, 300))
      }
    })()
    await Promise.all(
      Array.from({ length: 4 }, async (_, w) => {
        for (let n = 0; Date.now() < end; n++) {
          const t = Date.now()
          await producer.send({ topic: 'load', acks: -1, messages: [{ key: `w${w}-${n}`, value: 'x'.repeat(100) }] })
          latencies.push(Date.now() - t)
        }
      }),
    )
    await creating
    delay.disable()
    const p99 = delay.percentile(99) / 1e6
    process.stdout.write(
      `slow-fsync: ${latencies.length} acks=all sends, median ${latencies.sort((x, y) => x - y)[latencies.length >> 1]} ms; event-loop delay p99 ${p99.toFixed(1)} ms, max ${(delay.max / 1e6).toFixed(1)} ms\n`,
    )

    // Every acknowledgement waited for its fsync (flush.messages=1).
    expect(latencies.length).toBeGreaterThan(10)
    expect(latencies[0]).toBeGreaterThanOrEqual(FSYNC_MS - 5)
    // No member expired, no rebalance, and both kept heartbeating throughout.
    expect(crashes).toEqual([])
    expect(joins.length).toBe(joinsBefore)
    for (const [member, count] of heartbeats) expect(count - (heartbeatsBefore.get(member) ?? 0), member).toBeGreaterThanOrEqual(PRODUCE_MS / 1000)
    expect(heartbeats.size).toBe(2)
  }, 40_000)
})
