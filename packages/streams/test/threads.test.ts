import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBroker, type Broker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
import { Producer } from '@tidelog/producer'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KafkaStreams, Produced, Serdes, StreamsBuilder, Consumed, type KafkaStreamsState } from '@tidelog/streams'
import { complete, expected, readOutputs, topicsOf, verifierConfig, verifierTopology } from './helpers/eos-app.js'
import { waitForState } from './helpers/wordcount.js'

let broker: Broker
let dataDir: string
let stateDir: string
let brokers: string[]
let admin: Admin
let producer: Producer

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tidelog-streams-threads-'))
  stateDir = mkdtempSync(join(tmpdir(), 'tidelog-streams-threads-state-'))
  broker = await startBroker({ port: 0, dataDir })
  brokers = [`127.0.0.1:${broker.port}`]
  admin = new Admin({ brokers })
  producer = new Producer({ brokers, lingerMs: 0 })
})

afterAll(async () => {
  await producer?.close()
  await admin?.close()
  await broker?.close()
  rmSync(dataDir, { recursive: true, force: true })
  rmSync(stateDir, { recursive: true, force: true })
})

const L = (n: number) => {
  const b = Buffer.alloc(8)
  b.writeBigInt64BE(BigInt(n))
  return b
}
const S = Serdes.String()

describe('num.stream.threads and the uncaught exception handler', () => {
  it('two stream threads split the tasks between them (each its own consumer and transactional producer) and the results are exact', async () => {
    const t = topicsOf('t1')
    await admin.createTopics([t.data, t.echo, t.counts, t.sums].map((name) => ({ name, partitions: 4 })))
    const app = new KafkaStreams(verifierTopology('t1').build(), verifierConfig(brokers, 't1-app', { 'state.dir': stateDir, 'num.stream.threads': 2 }))
    const states: string[] = []
    app.setStateListener((s, old) => states.push(`${old}->${s}`))
    await app.start()
    await waitForState(app, 'RUNNING')
    const sent = Array.from({ length: 80 }, (_, i) => ({ key: `k${i % 8}`, value: i }))
    await producer.send(sent.map((r) => ({ topic: t.data, key: r.key, value: L(r.value) })))
    const seen = await readOutputs(brokers, 't1', 4, (o) => complete(o, sent))
    expect(seen.counts).toEqual(expected(sent).counts)
    expect(seen.echoed).toBe(80)

    // A rebalance may still be settling (eager: revoked tasks are briefly on no thread), so wait for a stable view.
    const settled = Date.now() + 30_000
    const full = () => app.metadataForLocalThreads().flatMap((x) => x.activeTasks).length === 8 && app.metadataForLocalThreads().every((x) => x.activeTasks.length > 0)
    while (!full() && Date.now() < settled) await new Promise((r) => setTimeout(r, 25))
    const threads = app.metadataForLocalThreads()
    expect(threads.map((x) => x.threadName)).toEqual([1, 2].map((i) => `t1-app-${app.processId}-StreamThread-${i}`))
    expect(threads.map((x) => x.transactionalId)).toEqual([1, 2].map((i) => `t1-app-${app.processId}-${i}`))
    expect(threads.every((x) => x.activeTasks.length > 0 && x.threadState === 'RUNNING')).toBe(true)
    // Every task of both sub-topologies runs on exactly one thread.
    expect(threads.flatMap((x) => x.activeTasks).sort()).toEqual(['0_0', '0_1', '0_2', '0_3', '1_0', '1_1', '1_2', '1_3'])
    await app.close()
    expect(states[0]).toBe('CREATED->REBALANCING')
    expect(states.slice(-2)).toEqual(['RUNNING->PENDING_SHUTDOWN', 'PENDING_SHUTDOWN->NOT_RUNNING'])
    expect(states.every((s) => ['CREATED->REBALANCING', 'REBALANCING->RUNNING', 'RUNNING->REBALANCING', 'RUNNING->PENDING_SHUTDOWN', 'PENDING_SHUTDOWN->NOT_RUNNING'].includes(s))).toBe(true)
  })

  /** input -> mapValues (throws once on the value 'boom') -> output. */
  function flaky(prefix: string, failures: { n: number }) {
    const b = new StreamsBuilder()
    b.stream(`${prefix}-in`, Consumed.with(S, S)).mapValues((v) => {
      if (v === 'boom' && failures.n-- > 0) throw new Error('failed once on purpose')
      return v.toUpperCase()
    }).to(`${prefix}-out`, Produced.with(S, S))
    return b.build()
  }

  async function outputs(topic: string, want: number): Promise<string[]> {
    const { Consumer } = await import('@tidelog/consumer')
    const c = new Consumer({ brokers, autoOffsetReset: 'earliest', isolationLevel: 'read_committed' })
    const out: string[] = []
    const ac = new AbortController()
    const timer = setTimeout(() => ac.abort(), 60_000)
    try {
      c.assign([{ topic, partition: 0 }])
      for await (const batch of c.batches({ signal: ac.signal })) {
        out.push(...batch.messages.map((m) => m.value!.toString()))
        if (out.length >= want) break
      }
    } catch (e) {
      if (!ac.signal.aborted) throw e
    } finally {
      clearTimeout(timer)
      await c.close()
    }
    return out
  }

  it('REPLACE_THREAD: the dead thread is replaced by one with the same index; under exactly_once_v2 the failed batch is processed once', async () => {
    await admin.createTopics([{ name: 'r1-in', partitions: 1 }, { name: 'r1-out', partitions: 1 }])
    const app = new KafkaStreams(flaky('r1', { n: 1 }), { 'application.id': 'r1-app', 'bootstrap.servers': brokers, 'processing.guarantee': 'exactly_once_v2', 'state.dir': stateDir })
    const errors: unknown[] = []
    app.setUncaughtExceptionHandler((e) => {
      errors.push(e)
      return 'REPLACE_THREAD'
    })
    await app.start()
    await producer.send(['a', 'b', 'boom', 'c'].map((value) => ({ topic: 'r1-in', key: 'k', value })))
    expect(await outputs('r1-out', 4)).toEqual(['A', 'B', 'BOOM', 'C'])
    expect(errors.map((e) => (e as Error).message)).toEqual(['failed once on purpose'])
    await waitForState(app, 'RUNNING')
    expect(app.metadataForLocalThreads().map((x) => x.threadName)).toEqual([`r1-app-${app.processId}-StreamThread-1`])
    await app.close()
    expect(app.state).toBe('NOT_RUNNING')
  })

  it('SHUTDOWN_CLIENT: the instance goes PENDING_ERROR then ERROR with the error, and setting a handler after start() is refused', async () => {
    await admin.createTopics([{ name: 's1-in', partitions: 1 }, { name: 's1-out', partitions: 1 }])
    const app = new KafkaStreams(flaky('s1', { n: 1 }), { 'application.id': 's1-app', 'bootstrap.servers': brokers, 'state.dir': stateDir, 'commit.interval.ms': 100 })
    const states: KafkaStreamsState[] = []
    app.setStateListener((s) => states.push(s))
    app.setUncaughtExceptionHandler(() => 'SHUTDOWN_CLIENT')
    await app.start()
    expect(() => app.setUncaughtExceptionHandler(() => 'REPLACE_THREAD')).toThrow(/before calling start\(\)/)
    await producer.send([{ topic: 's1-in', key: 'k', value: 'boom' }])
    await waitForState(app, 'ERROR')
    expect(states.slice(-2)).toEqual(['PENDING_ERROR', 'ERROR'])
    expect((app.error as Error).message).toBe('failed once on purpose')
    await app.close()
    expect(app.state).toBe('ERROR')
  })
})
