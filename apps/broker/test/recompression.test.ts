import { ApiKeys, CompressionType, ErrorCodes, batchSizeAt, decodeRecordBatches, encodeRecordBatch, readBatchHeader } from '@tidelog/protocol'
import { afterEach, describe, expect, it } from 'vitest'
import { type Broker, startBroker } from '../src/index.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'

// Broker-side recompression (Kafka's LogValidator): a topic whose compression.type
// names a codec stores every batch in that codec, whatever the producer used;
// `producer` (the default) stores batches as sent.

const open: { b: Broker; c: RawClient }[] = []
afterEach(async () => {
  for (const { b, c } of open.splice(0)) {
    c.close()
    await b.close()
  }
})

async function start(): Promise<RawClient> {
  const b = await startBroker({ port: 0, dataDir: tempDir(), logLevel: 'error' })
  const c = await RawClient.connect(b.port)
  open.push({ b, c })
  return c
}

async function createTopic(c: RawClient, name: string, configs: Record<string, string>): Promise<void> {
  const r = await c.request(ApiKeys.CreateTopics, 7, {
    topics: [{ name, numPartitions: 1, replicationFactor: 1, assignments: [], configs: Object.entries(configs).map(([n, value]) => ({ name: n, value })) }],
    timeoutMs: 1000,
    validateOnly: false,
  })
  expect(r.topics[0].errorCode, r.topics[0].errorMessage ?? '').toBe(0)
}

async function produce(c: RawClient, topic: string, records: Buffer) {
  const r = await c.request(ApiKeys.Produce, 9, { transactionalId: null, acks: -1, timeoutMs: 1000, topicData: [{ name: topic, partitionData: [{ index: 0, records }] }] })
  return r.responses[0].partitionResponses[0]
}

/** The stored batches from offset 0, as a consumer fetches them (one fetch after another to the end). */
async function fetchAll(c: RawClient, topic: string): Promise<Buffer> {
  const parts: Buffer[] = []
  for (let next = 0n; ; ) {
    const f = await c.request(ApiKeys.Fetch, 12, {
      replicaId: -1, maxWaitMs: 0, minBytes: 1, maxBytes: 1 << 20, isolationLevel: 0, sessionId: 0, sessionEpoch: -1,
      topics: [{ topic, partitions: [{ partition: 0, fetchOffset: next, partitionMaxBytes: 1 << 20 }] }],
      forgottenTopicsData: [], rackId: '',
    })
    const p = f.responses[0].partitions[0]
    expect(p.errorCode).toBe(0)
    if (p.records === null || p.records.length === 0) return Buffer.concat(parts)
    const buf = Buffer.from(p.records)
    parts.push(buf)
    for (const h of headersOf(buf)) next = h.baseOffset + BigInt(h.lastOffsetDelta) + 1n
  }
}

function headersOf(buf: Buffer) {
  const out = []
  for (let p = 0; p < buf.length; ) {
    const h = readBatchHeader(buf, p)
    out.push(h)
    p += batchSizeAt(buf, p)
  }
  return out
}

const records = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({ key: `k${i}`, value: `${tag}-${i}-${'x'.repeat(200)}`, timestamp: 1_700_000_000_000 + i, headers: [{ key: 'h', value: Buffer.from(`${i}`) }] }))

describe('broker-side recompression (compression.type)', () => {
  it('stores each batch in the topic codec, with the offsets, timestamps, keys, values and headers the producer sent', async () => {
    const c = await start()
    for (const [codec, id] of [['gzip', CompressionType.Gzip], ['snappy', CompressionType.Snappy], ['lz4', CompressionType.Lz4], ['zstd', CompressionType.Zstd], ['uncompressed', CompressionType.None]] as const) {
      const topic = `to-${codec}`
      await createTopic(c, topic, { 'compression.type': codec, ...(codec === 'gzip' ? { 'compression.gzip.level': '9' } : {}) })
      const sent: string[] = []
      let n = 0
      for (const from of ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const) {
        const recs = records(5, from)
        const r = await produce(c, topic, encodeRecordBatch({ records: recs, compression: from }))
        expect(r.errorCode, `${from} -> ${codec}`).toBe(0)
        expect(Number(r.baseOffset)).toBe(n)
        n += recs.length
        sent.push(...recs.map((x) => `${x.key}=${x.value}@${x.timestamp}#${x.headers[0]!.value.toString()}`))
      }
      const stored = await fetchAll(c, topic)
      expect(headersOf(stored).map((h) => h.compression), codec).toEqual([id, id, id, id, id])
      const seen: string[] = []
      for (const b of decodeRecordBatches(stored)) for (const r of b) seen.push(`${Buffer.from(r.key!).toString()}=${Buffer.from(r.value!).toString()}@${r.timestamp}#${Buffer.from(r.headers[0]!.value!).toString()}`)
      expect(seen, codec).toEqual(sent)
      expect([...decodeRecordBatches(stored)].flatMap((b) => [...b].map((r) => Number(r.offset)))).toEqual([...Array(25).keys()])
    }
  })

  it('keeps an idempotent batch its producer id, epoch and sequence, so a retry is still recognised as a duplicate', async () => {
    const c = await start()
    await createTopic(c, 'idem', { 'compression.type': 'zstd' })
    const pid = await c.request(ApiKeys.InitProducerId, 4, { transactionalId: null, transactionTimeoutMs: 60000, producerId: -1n, producerEpoch: -1 })
    expect(pid.errorCode).toBe(0)
    const batch = (seq: number) => encodeRecordBatch({ records: records(3, `s${seq}`), compression: 'lz4', producerId: pid.producerId, producerEpoch: pid.producerEpoch, baseSequence: seq })
    expect(Number((await produce(c, 'idem', batch(0))).baseOffset)).toBe(0)
    expect(Number((await produce(c, 'idem', batch(3))).baseOffset)).toBe(3)
    // The retry of the second batch gets its first offset again and is not stored twice.
    const retry = await produce(c, 'idem', batch(3))
    expect([retry.errorCode, Number(retry.baseOffset)]).toEqual([0, 3])
    const out = await produce(c, 'idem', batch(9))
    expect(out.errorCode).toBe(ErrorCodes.OUT_OF_ORDER_SEQUENCE_NUMBER)
    const hs = headersOf(await fetchAll(c, 'idem'))
    expect(hs.map((h) => [h.compression, h.producerId, h.producerEpoch, h.baseSequence])).toEqual([
      [CompressionType.Zstd, pid.producerId, pid.producerEpoch, 0],
      [CompressionType.Zstd, pid.producerId, pid.producerEpoch, 3],
    ])
  })

  it('LogAppendTime topics stamp the recompressed batch; producer keeps the batch byte for byte; too large once recompressed is MESSAGE_TOO_LARGE', async () => {
    const c = await start()
    await createTopic(c, 'stamped', { 'compression.type': 'gzip', 'message.timestamp.type': 'LogAppendTime' })
    const before = Date.now()
    const r = await produce(c, 'stamped', encodeRecordBatch({ records: records(4, 'a') }))
    expect(Number(r.logAppendTimeMs)).toBeGreaterThanOrEqual(before)
    const [h] = headersOf(await fetchAll(c, 'stamped'))
    expect([h!.compression, h!.timestampType, h!.maxTimestamp]).toEqual([CompressionType.Gzip, 1, r.logAppendTimeMs])

    await createTopic(c, 'as-sent', {})
    const sent = encodeRecordBatch({ records: records(4, 'b'), compression: 'snappy' })
    await produce(c, 'as-sent', Buffer.from(sent))
    const stored = await fetchAll(c, 'as-sent')
    // Byte for byte but for the base offset and leader epoch the log assigns (zero here).
    expect(stored.subarray(12 + 4)).toEqual(sent.subarray(12 + 4))

    // 200 KiB of zeros gzip to a few hundred bytes, within max.message.bytes; stored uncompressed they are not.
    await createTopic(c, 'plain', { 'compression.type': 'uncompressed', 'max.message.bytes': '65536' })
    const big = await produce(c, 'plain', encodeRecordBatch({ records: [{ key: 'z', value: Buffer.alloc(200 * 1024) }], compression: 'gzip' }))
    expect(big.errorCode).toBe(ErrorCodes.MESSAGE_TOO_LARGE)
    expect(big.errorMessage).toMatch(/once recompressed as uncompressed, more than max.message.bytes 65536/)
    expect((await fetchAll(c, 'plain')).length).toBe(0)
    expect((await produce(c, 'plain', encodeRecordBatch({ records: records(2, 'ok'), compression: 'gzip' }))).errorCode).toBe(0)
  })
})
