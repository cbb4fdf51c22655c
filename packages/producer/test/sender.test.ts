/**
 * The sender and idempotence against a fake cluster that applies Kafka's sequence rules:
 * retries after lost connections, leader moves, the Java client's recoveries from
 * OUT_OF_ORDER_SEQUENCE_NUMBER / UNKNOWN_PRODUCER_ID, DUPLICATE_SEQUENCE_NUMBER, InitProducerId
 * failures, and brokers without idempotence.
 */
import diagnostics from 'node:diagnostics_channel'
import { afterEach, describe, expect, it } from 'vitest'
import { ClientClosedError, UnsupportedVersionError } from '@tidelog/client'
import { ErrorCodes, ProtocolError } from '@tidelog/protocol'
import { DeliveryTimeoutError, Producer, type ProducerOptions, type RecordMetadata, type SendError } from '../src/index.js'
import { FakeKafka } from './fake-kafka.js'

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f()
})

async function cluster(brokers = 1): Promise<FakeKafka> {
  const k = await FakeKafka.start(brokers)
  cleanup.push(() => k.close())
  return k
}

function producer(k: FakeKafka, opts: Partial<ProducerOptions> = {}): Producer {
  const p = new Producer({ brokers: k.bootstrap, retryBackoffMs: 5, retryBackoffMaxMs: 20, reconnectBackoffMs: 5, reconnectBackoffMaxMs: 20, lingerMs: 1, ...opts })
  cleanup.push(() => p.close({ timeoutMs: 2_000 }))
  return p
}

const values = (n: number, from = 0) => Array.from({ length: n }, (_, i) => String(from + i))

/** Every value exactly once, each partition in send order. */
function expectExactlyOnceInOrder(k: FakeKafka, topic: string, partitions: number, sent: string[]): void {
  const seen: string[] = []
  for (let p = 0; p < partitions; p++) {
    const vs = k.log(topic, p).records.map((r) => r.value!)
    const nums = vs.map(Number)
    for (let i = 1; i < nums.length; i++) expect(nums[i]!, `partition ${p} order`).toBeGreaterThan(nums[i - 1]!)
    seen.push(...vs)
  }
  expect(seen.length).toBe(sent.length)
  expect(new Set(seen)).toEqual(new Set(sent))
}

describe('idempotent sender', () => {
  it('numbers each partition from 0 under one producer id and epoch', async () => {
    const k = await cluster()
    k.createTopic('t', 2)
    const p = producer(k)
    await p.send(values(50).map((v, i) => ({ topic: 't', value: v, partition: i % 2 })))
    await p.send(values(10, 50).map((v) => ({ topic: 't', value: v, partition: 0 })))
    expect(k.initProducerIdCalls).toBe(1)
    const h0 = k.received.filter((r) => r.partition === 0).map((r) => r.header)
    expect(h0[0]!.producerId).toBe(1000n)
    expect(h0[0]!.producerEpoch).toBe(0)
    expect(h0.map((h) => h.baseSequence)).toEqual([0, 25])
    expect(k.log('t', 0).records.map((r) => r.sequence)).toEqual(Array.from({ length: 35 }, (_, i) => i))
  })

  it('retries after lost connections keep sequences: nothing twice, nothing reordered, 5 in flight', async () => {
    const k = await cluster()
    k.createTopic('t', 3)
    // Every 7th request: appended but the answer is lost; every 11th: lost before the append.
    k.fault = (c) => (c.requestCount % 7 === 0 ? 'append-drop' : c.requestCount % 11 === 0 ? 'drop' : undefined)
    const p = producer(k, { batchBytes: 200, lingerMs: 0 })
    const sent = values(3_000)
    const results = await Promise.all(sent.map((v, i) => p.send({ topic: 't', key: `k${i % 13}`, value: v })))
    expectExactlyOnceInOrder(k, 't', 3, sent)
    // Retried batches the broker already had were answered with their original offsets.
    const byValue = new Map<string, RecordMetadata>(results.map((r, i) => [sent[i]!, r]))
    for (let part = 0; part < 3; part++) for (const rec of k.log('t', part).records) expect(byValue.get(rec.value!)!.offset).toBe(rec.offset)
    expect(k.brokers[0]!.connections.length).toBeGreaterThan(5)
  })

  it('follows a leader that moved, keeping the sequence', async () => {
    const k = await cluster(2)
    k.createTopic('t', 1, [0])
    const p = producer(k)
    await p.send(values(10).map((v) => ({ topic: 't', value: v })))
    k.setLeader('t', 0, 1)
    await p.send(values(10, 10).map((v) => ({ topic: 't', value: v })))
    const last = k.received[k.received.length - 1]!
    expect(last.broker).toBe(1)
    expect(last.header.baseSequence).toBe(10)
    expect(k.received.some((r) => r.broker === 0 && r.header.baseSequence === 10)).toBe(true)
    expect(k.log('t', 0).records.map((r) => r.value)).toEqual(values(20))
  })

  it('treats DUPLICATE_SEQUENCE_NUMBER as success without an offset', async () => {
    const k = await cluster()
    k.createTopic('t', 1)
    let once = true
    k.fault = () => {
      if (!once) return undefined
      once = false
      return ErrorCodes.DUPLICATE_SEQUENCE_NUMBER
    }
    const p = producer(k)
    const r = await p.send({ topic: 't', value: 'v' })
    expect(r.offset).toBe(-1n)
  })

  it('recovers from UNKNOWN_PRODUCER_ID by bumping the epoch and starting over at sequence 0', async () => {
    const k = await cluster()
    k.createTopic('t', 1)
    const p = producer(k)
    await p.send(values(5).map((v) => ({ topic: 't', value: v })))
    k.loseProducerState('t', 0)
    const r = await p.send(values(5, 5).map((v) => ({ topic: 't', value: v })))
    expect(r.map((x) => x.offset)).toEqual([5n, 6n, 7n, 8n, 9n])
    const last = k.received[k.received.length - 1]!.header
    expect(last.producerEpoch).toBe(1)
    expect(last.baseSequence).toBe(0)
    expect(k.log('t', 0).records.map((x) => x.value)).toEqual(values(5, 5))
  })

  it('bumps the epoch after a batch fails for good, so later batches leave no gap', async () => {
    const k = await cluster()
    k.createTopic('t', 1)
    let n = 0
    // The second batch is refused for good; the ones behind it would be out of order under the old numbering.
    k.fault = (c) => (c.header.baseSequence === 1 && c.header.producerEpoch === 0 && n++ === 0 ? ErrorCodes.INVALID_RECORD : undefined)
    // One record per batch, so that the third is in flight behind the second.
    const p = producer(k, { batchBytes: 1 })
    await p.send({ topic: 't', value: '0' })
    const b = p.send({ topic: 't', value: '1' })
    const c = p.send({ topic: 't', value: '2' })
    await expect(b).rejects.toMatchObject({ type: 'INVALID_RECORD' })
    expect((await c).offset).toBe(1n)
    const headers = k.received.map((r) => [r.header.producerEpoch, r.header.baseSequence])
    // The third went out as sequence 2, was refused as out of order, and was renumbered.
    expect(headers).toEqual([[0, 0], [0, 1], [0, 2], [1, 0]])
    expect(k.log('t', 0).records.map((x) => x.value)).toEqual(['0', '2'])
  })

  it('retries InitProducerId on retriable errors', async () => {
    const k = await cluster()
    k.createTopic('t', 1)
    k.initProducerIdError = (call) => (call < 2 ? ErrorCodes.COORDINATOR_LOAD_IN_PROGRESS : 0)
    const p = producer(k)
    expect((await p.send({ topic: 't', value: 'v' })).offset).toBe(0n)
    expect(k.initProducerIdCalls).toBe(3)
  })

  it('fails every record, then every send, when the producer may not be idempotent', async () => {
    const k = await cluster()
    k.createTopic('t', 1)
    k.initProducerIdError = () => ErrorCodes.CLUSTER_AUTHORIZATION_FAILED
    const p = producer(k)
    const err = await p.send({ topic: 't', value: 'v' }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ProtocolError)
    expect((err as ProtocolError).type).toBe('CLUSTER_AUTHORIZATION_FAILED')
    await expect(p.send({ topic: 't', value: 'w' })).rejects.toBe(err)
  })

  it('turns implicit idempotence off on a broker without InitProducerId; explicit idempotence fails', async () => {
    const k = await cluster()
    k.createTopic('t', 1)
    for (const b of k.brokers) b.apiVersions = b.apiVersions.filter((v) => v.apiKey !== 22)
    const implicit = producer(k)
    expect((await implicit.send({ topic: 't', value: 'v' })).offset).toBe(0n)
    expect(k.received[0]!.header.producerId).toBe(-1n)
    const explicit = producer(k, { idempotent: true })
    await expect(explicit.send({ topic: 't', value: 'v' })).rejects.toBeInstanceOf(UnsupportedVersionError)
  })

  it('fails a record with DeliveryTimeoutError when retries run out of time, saying why', async () => {
    const k = await cluster()
    k.createTopic('t', 1)
    k.fault = () => ErrorCodes.NOT_ENOUGH_REPLICAS
    const p = producer(k, { deliveryTimeoutMs: 400, requestTimeoutMs: 200, lingerMs: 0 })
    const err = await p.send({ topic: 't', value: 'v' }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(DeliveryTimeoutError)
    expect((err as DeliveryTimeoutError).attempts).toBeGreaterThan(1)
    expect(((err as Error).cause as ProtocolError).type).toBe('NOT_ENOUGH_REPLICAS')
  })

  it('close() with a timeout fails what is still unsent', async () => {
    const k = await cluster()
    k.createTopic('t', 1)
    k.fault = () => ErrorCodes.NOT_ENOUGH_REPLICAS
    const p = producer(k)
    const sent = p.send({ topic: 't', value: 'v' }).catch((e: unknown) => e)
    await p.close({ timeoutMs: 200 })
    expect(await sent).toBeInstanceOf(ClientClosedError)
  })

  it('pipelines up to maxInFlight requests per connection, never more', async () => {
    const k = await cluster()
    k.createTopic('t', 6)
    // A slow broker, so that the producer has every request it may have outstanding.
    const broker = k.brokers[0]!
    const produce = broker.handlers.get(0)!
    broker.on(0, async (req) => {
      await new Promise((r) => setTimeout(r, 10))
      return produce(req)
    })
    // Requests written and not yet answered, as the client's diagnostics report them.
    let outstanding = 0
    let maxOutstanding = 0
    const start = (e: unknown) => {
      if ((e as { apiKey: number }).apiKey !== 0) return
      outstanding++
      maxOutstanding = Math.max(maxOutstanding, outstanding)
    }
    const end = (e: unknown) => {
      if ((e as { apiKey: number }).apiKey === 0) outstanding--
    }
    diagnostics.subscribe('tidelog:request:start', start)
    diagnostics.subscribe('tidelog:request:end', end)
    try {
      const p = producer(k, { batchBytes: 500, lingerMs: 0, maxInFlight: 3 })
      await p.send(values(5_000).map((v) => ({ topic: 't', value: v })))
    } finally {
      diagnostics.unsubscribe('tidelog:request:start', start)
      diagnostics.unsubscribe('tidelog:request:end', end)
    }
    expect(maxOutstanding).toBe(3)
  })

  it('fails records for a topic it may not write to at once, with the broker\'s error', async () => {
    const k = await cluster()
    k.state.topics.push({ name: 'secret', leaders: [], errorCode: ErrorCodes.TOPIC_AUTHORIZATION_FAILED })
    k.createTopic('open', 1)
    const p = producer(k, { maxBlockMs: 10_000 })
    const started = Date.now()
    const err = await p.send({ topic: 'secret', value: 'v' }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ProtocolError)
    expect((err as ProtocolError).type).toBe('TOPIC_AUTHORIZATION_FAILED')
    expect(Date.now() - started).toBeLessThan(5_000)
    k.fault = (c) => (c.topic === 'open' ? ErrorCodes.TOPIC_AUTHORIZATION_FAILED : undefined)
    const denied = await p.send({ topic: 'open', value: 'v' }).catch((e: unknown) => e)
    expect((denied as ProtocolError).type).toBe('TOPIC_AUTHORIZATION_FAILED')
    expect((denied as ProtocolError).partition).toBe(0)
  })

  it('waits for a topic created while send() waits, and for a partition to get a leader', async () => {
    const k = await cluster()
    const p = producer(k, { maxBlockMs: 5_000 })
    const late = p.send({ topic: 'late', value: 'v' })
    await new Promise((r) => setTimeout(r, 100))
    k.createTopic('late', 1, [-1])
    await new Promise((r) => setTimeout(r, 200))
    k.setLeader('late', 0, 0)
    expect((await late).offset).toBe(0n)
  })

  it('stays exactly once and in order through mixed faults, refusals and leader moves (seeded)', async () => {
    const k = await cluster(2)
    k.createTopic('t', 4)
    let seed = 0x1234567
    const rnd = () => {
      seed ^= seed << 13
      seed ^= seed >>> 17
      seed ^= seed << 5
      return (seed >>> 0) / 2 ** 32
    }
    k.fault = (c) => {
      // Refusals depend on the batch's content, as a broker's validation does, so every attempt
      // of the same records meets the same answer; the other faults strike at random.
      if (Number(c.firstValue) % 97 === 5) return ErrorCodes.INVALID_RECORD
      const x = rnd()
      return x < 0.04 ? 'append-drop' : x < 0.07 ? 'drop' : x < 0.09 ? ErrorCodes.NOT_ENOUGH_REPLICAS : x < 0.1 ? ErrorCodes.REQUEST_TIMED_OUT : undefined
    }
    const p = producer(k, { batchBytes: 300, lingerMs: 0 })
    const mover = setInterval(() => k.setLeader('t', Math.floor(rnd() * 4), Math.floor(rnd() * 2)), 30)
    const sent = values(4_000)
    const failed = new Set<string>()
    try {
      const chunks: Promise<unknown>[] = []
      for (let i = 0; i < sent.length; i += 100) {
        const part = sent.slice(i, i + 100)
        chunks.push(
          p.send(part.map((v, j) => ({ topic: 't', key: `k${(i + j) % 17}`, value: v }))).catch((e: unknown) => {
            ;(e as SendError).errors.forEach((x, j) => {
              if (x !== undefined) failed.add(part[j]!)
            })
          }),
        )
      }
      await Promise.all(chunks)
    } finally {
      clearInterval(mover)
    }
    expect(failed.size).toBeGreaterThan(0)
    expectExactlyOnceInOrder(k, 't', 4, sent.filter((v) => !failed.has(v)))
    // The refused batches made the producer renumber under newer epochs.
    expect(k.received.some((r) => r.header.producerEpoch > 0)).toBe(true)
  })

  it('after a batch with a sequence expires, settles the unknown outcome before sending more', async () => {
    const k = await cluster()
    k.createTopic('t', 1)
    let refuse = true
    k.fault = () => (refuse ? ErrorCodes.NOT_ENOUGH_REPLICAS : undefined)
    const p = producer(k, { deliveryTimeoutMs: 300, requestTimeoutMs: 200, lingerMs: 0, retryBackoffMs: 100, retryBackoffMaxMs: 100 })
    await expect(p.send({ topic: 't', value: 'expires' })).rejects.toBeInstanceOf(DeliveryTimeoutError)
    refuse = false
    expect((await p.send({ topic: 't', value: 'next' })).offset).toBe(0n)
    // Nothing of the expired batch was acknowledged: its sequence may have left a gap, so the
    // next batch starts a new epoch at 0 rather than continue at 1.
    const last = k.received[k.received.length - 1]!.header
    expect([last.producerEpoch, last.baseSequence]).toEqual([1, 0])
    expect(k.log('t', 0).records.map((r) => r.value)).toEqual(['next'])
  })
})

