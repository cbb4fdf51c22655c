import { gzipSync } from 'node:zlib'
import { ApiKeys, ErrorCodes, compress, crc32c, decodeRecordBatches } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { type Broker, type BrokerOptions, startBroker } from '../src/index.js'
import { makeBatch } from './helpers/batches.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'
import { connectTracked, createTopic, trackOpened } from './helpers/opened.js'

const open = trackOpened()

async function start(opts: BrokerOptions = {}) {
  const b = await startBroker({ port: 0, dataDir: tempDir(), ...opts })
  open.brokers.push(b)
  return { b, c: await connect(b) }
}

const connect = (b: Broker) => connectTracked(open, b)

function produceReq(topic: string, batches: Buffer[], acks = -1) {
  return {
    transactionalId: null,
    acks,
    timeoutMs: 1000,
    topicData: [{ name: topic, partitionData: batches.map((records, index) => ({ index, records })) }],
  }
}

async function fetchOne(c: RawClient, topic: string, partition: number) {
  const r = await c.request(ApiKeys.Fetch, 12, {
    replicaId: -1, maxWaitMs: 0, minBytes: 1, maxBytes: 1 << 20, isolationLevel: 0, sessionId: 0, sessionEpoch: -1,
    topics: [{ topic, partitions: [{ partition, fetchOffset: 0n, partitionMaxBytes: 1 << 20, logStartOffset: -1n, currentLeaderEpoch: -1 }] }],
    forgottenTopicsData: [], rackId: '',
  })
  return r.responses[0].partitions[0]
}

// A hand-rolled record encoder, so tests can write what no codec would.
function uvarint(v: number): Buffer {
  const out: number[] = []
  v >>>= 0
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80)
    v >>>= 7
  }
  out.push(v)
  return Buffer.from(out)
}
const zz = (n: number) => uvarint((n << 1) ^ (n >> 31))

interface RawRecord {
  offsetDelta: number
  timestampDelta?: number
  value?: Buffer
  headerCount?: number
  /** Declared size minus the real one. */
  sizeSkew?: number
}

function rawRecord(r: RawRecord): Buffer {
  const value = r.value ?? Buffer.from('v')
  const body = Buffer.concat([
    Buffer.from([0]),
    zz(r.timestampDelta ?? 0),
    zz(r.offsetDelta),
    zz(-1),
    zz(value.length),
    value,
    zz(r.headerCount ?? 0),
  ])
  return Buffer.concat([zz(body.length + (r.sizeSkew ?? 0)), body])
}

interface RawBatch {
  records: Buffer[]
  count?: number
  lastOffsetDelta?: number
  compression?: number
  /** Replaces the (possibly compressed) records section. */
  body?: Buffer
  trailing?: Buffer
  baseTimestamp?: number
  maxTimestamp?: number
  logAppendTime?: boolean
}

/** A magic-2 batch with a correct CRC around whatever it is given. */
async function rawBatch(b: RawBatch): Promise<Buffer> {
  let body = Buffer.concat([...b.records, b.trailing ?? Buffer.alloc(0)])
  if (b.compression !== undefined && b.body === undefined) body = Buffer.from(await compress(b.compression, body))
  if (b.body !== undefined) body = b.body
  const h = Buffer.alloc(61)
  const ts = b.baseTimestamp ?? Date.now()
  h.writeInt32BE(49 + body.length, 8)
  h.writeInt8(2, 16)
  h.writeInt16BE((b.compression ?? 0) | (b.logAppendTime === true ? 0x08 : 0), 21)
  h.writeInt32BE(b.lastOffsetDelta ?? (b.count ?? b.records.length) - 1, 23)
  h.writeBigInt64BE(BigInt(ts), 27)
  h.writeBigInt64BE(BigInt(b.maxTimestamp ?? ts), 35)
  h.writeBigInt64BE(-1n, 43)
  h.writeInt16BE(-1, 51)
  h.writeInt32BE(-1, 53)
  h.writeInt32BE(b.count ?? b.records.length, 57)
  const batch = Buffer.concat([h, body])
  batch.writeUInt32BE(crc32c(batch, 21, batch.length), 17)
  return batch
}

const two = [rawRecord({ offsetDelta: 0 }), rawRecord({ offsetDelta: 1 })]

describe('record validation on produce', () => {
  it('refuses CRC-valid garbage per partition; the good partition of the same request is stored', async () => {
    const { c } = await start()
    const cases: [string, Buffer, number][] = [
      ['more records declared than held', await rawBatch({ records: two, count: 3 }), ErrorCodes.INVALID_RECORD],
      ['offset deltas out of order', await rawBatch({ records: [rawRecord({ offsetDelta: 0 }), rawRecord({ offsetDelta: 2 })] }), ErrorCodes.INVALID_RECORD],
      ['a record longer than the batch', await rawBatch({ records: [rawRecord({ offsetDelta: 0, sizeSkew: 40 })] }), ErrorCodes.INVALID_RECORD],
      ['a record shorter than its fields', await rawBatch({ records: [rawRecord({ offsetDelta: 0, sizeSkew: -2 }), Buffer.from([0, 0])] }), ErrorCodes.INVALID_RECORD],
      ['bytes after the last record', await rawBatch({ records: two, trailing: Buffer.from([1, 2, 3]) }), ErrorCodes.INVALID_RECORD],
      ['a negative header count', await rawBatch({ records: [rawRecord({ offsetDelta: 0, headerCount: -5 })] }), ErrorCodes.INVALID_RECORD],
      ['gzip that does not inflate', await rawBatch({ records: two, compression: 1, body: Buffer.from('not gzip at all, only text') }), ErrorCodes.CORRUPT_MESSAGE],
      ['lz4 that does not inflate', await rawBatch({ records: two, compression: 3, body: Buffer.alloc(64, 7) }), ErrorCodes.CORRUPT_MESSAGE],
      ['gzip holding fewer records than declared', await rawBatch({ records: two, count: 5, compression: 1 }), ErrorCodes.INVALID_RECORD],
      ['zstd holding out-of-order offsets', await rawBatch({ records: [rawRecord({ offsetDelta: 1 }), rawRecord({ offsetDelta: 0 })], compression: 4 }), ErrorCodes.INVALID_RECORD],
    ]
    const topic = 'garbage'
    await createTopic(c, topic, cases.length + 1)
    const good = makeBatch(3)
    const r = await c.request(ApiKeys.Produce, 9, produceReq(topic, [...cases.map((x) => x[1]), good]))
    const parts = r.responses[0].partitionResponses
    for (let i = 0; i < cases.length; i++) {
      const [what, , code] = cases[i]!
      expect({ what, code: parts[i].errorCode }).toEqual({ what, code })
      expect(parts[i].errorMessage).toEqual(expect.any(String))
      expect(parts[i].baseOffset).toBe(-1n)
      // Nothing stored: the log end offset has not moved and a consumer gets no bytes.
      const f = await fetchOne(c, topic, i)
      expect(f.highWatermark).toBe(0n)
      expect(f.records?.length ?? 0).toBe(0)
    }
    expect(parts[1].recordErrors).toEqual([{ batchIndex: 1, batchIndexErrorMessage: expect.stringContaining('offset delta 2') }])
    expect(parts[cases.length].errorCode).toBe(0)
    expect(parts[cases.length].baseOffset).toBe(0n)
    const stored = await fetchOne(c, topic, cases.length)
    expect(stored.highWatermark).toBe(3n)
    expect([...decodeRecordBatches(stored.records)[0]!].map((x) => x.value?.toString())).toEqual(['value-0', 'value-1', 'value-2'])
  })

  it('stores every real codec\'s batches and serves them back byte for byte', async () => {
    const { c } = await start()
    await createTopic(c, 'codecs', 4)
    const batches = (['gzip', 'snappy', 'lz4', 'zstd'] as const).map((compression) => makeBatch(50, { compression }))
    const sent = batches.map((b) => Buffer.from(b))
    const r = await c.request(ApiKeys.Produce, 9, produceReq('codecs', batches))
    expect(r.responses[0].partitionResponses.map((p: any) => p.errorCode)).toEqual([0, 0, 0, 0])
    for (let i = 0; i < 4; i++) {
      const f = await fetchOne(c, 'codecs', i)
      // Stored as sent: only the partition leader epoch (outside the CRC) may differ.
      expect(Buffer.from(f.records).subarray(16)).toEqual(sent[i]!.subarray(16))
      expect([...decodeRecordBatches(f.records)[0]!]).toHaveLength(50)
    }
  })

  it('refuses a compressed batch that inflates beyond the cap with MESSAGE_TOO_LARGE', async () => {
    const { c } = await start()
    await createTopic(c, 'bomb', 1)
    // 65 MiB of zeros gzip to about 64 KiB: well within max.message.bytes, beyond the 64 MiB inflate cap.
    const bomb = await rawBatch({ records: two, compression: 1, body: gzipSync(Buffer.alloc(65 * 1024 * 1024)) })
    expect(bomb.length).toBeLessThan(1048588)
    const r = await c.request(ApiKeys.Produce, 9, produceReq('bomb', [bomb]))
    expect(r.responses[0].partitionResponses[0].errorCode).toBe(ErrorCodes.MESSAGE_TOO_LARGE)
    expect((await fetchOne(c, 'bomb', 0)).highWatermark).toBe(0n)
  })

  it('checks CreateTime timestamps against log.message.timestamp.before/after.max.ms, naming each bad record', async () => {
    const { b, c } = await start({ messageTimestampBeforeMaxMs: 3_600_000, messageTimestampAfterMaxMs: 60_000 })
    await createTopic(c, 'ts', 2)
    const now = Date.now()
    const mixed = makeBatch([
      { value: 'now', timestamp: now },
      { value: 'two hours ago', timestamp: now - 7_200_000 },
      { value: 'ten minutes ahead', timestamp: now + 600_000 },
      { value: 'half an hour ago', timestamp: now - 1_800_000 },
    ])
    const r = await c.request(ApiKeys.Produce, 9, produceReq('ts', [mixed, makeBatch(2)]))
    const [bad, ok] = r.responses[0].partitionResponses
    expect(bad.errorCode).toBe(ErrorCodes.INVALID_TIMESTAMP)
    expect(bad.recordErrors.map((e: any) => e.batchIndex)).toEqual([1, 2])
    expect(bad.errorMessage).toMatch(/2 record\(s\) rejected for their timestamp/)
    expect(ok.errorCode).toBe(0)
    expect((await fetchOne(c, 'ts', 0)).highWatermark).toBe(0n)

    // Versions before 8 have no record errors or message on the wire: the code alone.
    const v7 = await (await connect(b)).request(ApiKeys.Produce, 7, produceReq('ts', [makeBatch([{ value: 'old', timestamp: now - 7_200_000 }])]))
    expect(v7.responses[0].partitionResponses[0].errorCode).toBe(ErrorCodes.INVALID_TIMESTAMP)
    expect((await fetchOne(c, 'ts', 0)).highWatermark).toBe(0n)
  })

  it('accepts any timestamp by default (Kafka 3.9: Long.MAX_VALUE) and ignores them for LogAppendTime topics', async () => {
    const { c } = await start()
    await createTopic(c, 'any', 1)
    const r = await c.request(ApiKeys.Produce, 9, produceReq('any', [makeBatch([{ value: 'epoch', timestamp: 0 }, { value: 'far', timestamp: 4_102_444_800_000 }])]))
    expect(r.responses[0].partitionResponses[0].errorCode).toBe(0)

    const { c: c2 } = await start({ messageTimestampBeforeMaxMs: 1000, messageTimestampAfterMaxMs: 1000 })
    await createTopic(c2, 'lat', 1, { 'message.timestamp.type': 'LogAppendTime' })
    const old = await c2.request(ApiKeys.Produce, 9, produceReq('lat', [makeBatch([{ value: 'old', timestamp: 5 }])]))
    expect(old.responses[0].partitionResponses[0].errorCode).toBe(0)
    // A producer may not claim LogAppendTime itself.
    const claimed = await c2.request(ApiKeys.Produce, 9, produceReq('lat', [makeBatch(2, { timestampType: 1 })]))
    expect(claimed.responses[0].partitionResponses[0].errorCode).toBe(ErrorCodes.INVALID_TIMESTAMP)
    expect(claimed.responses[0].partitionResponses[0].recordErrors).toHaveLength(2)
    expect((await fetchOne(c2, 'lat', 0)).highWatermark).toBe(1n)
  })

  it('corrects a CreateTime batch whose maxTimestamp lies, keeping its CRC valid', async () => {
    const { c } = await start()
    await createTopic(c, 'maxts', 1)
    const base = Date.now() - 1000
    const lying = await rawBatch({ records: [rawRecord({ offsetDelta: 0, timestampDelta: 0 }), rawRecord({ offsetDelta: 1, timestampDelta: 700 })], baseTimestamp: base, maxTimestamp: base + 999_999 })
    const r = await c.request(ApiKeys.Produce, 9, produceReq('maxts', [lying]))
    expect(r.responses[0].partitionResponses[0].errorCode).toBe(0)
    const [batch] = decodeRecordBatches((await fetchOne(c, 'maxts', 0)).records) // verifies the CRC
    expect(batch!.maxTimestamp).toBe(BigInt(base + 700))
    // ListOffsets by time uses the corrected value: nothing is newer than base + 700.
    const lo = await c.request(ApiKeys.ListOffsets, 7, {
      replicaId: -1, isolationLevel: 0,
      topics: [{ name: 'maxts', partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: BigInt(base + 701) }] }],
    })
    expect(lo.topics[0].partitions[0].offset).toBe(-1n)
  })

  it('leaves a good producer on another connection untouched while a bad one is refused', async () => {
    const { b, c: bad } = await start()
    await createTopic(bad, 'shared', 1)
    const good = await connect(b)
    const garbage = await rawBatch({ records: two, count: 9 })
    let next = 0n
    for (let i = 0; i < 30; i++) {
      const [g, x] = await Promise.all([
        good.request(ApiKeys.Produce, 9, produceReq('shared', [makeBatch(2)])),
        bad.request(ApiKeys.Produce, 9, produceReq('shared', [Buffer.from(garbage)])),
      ])
      expect(x.responses[0].partitionResponses[0].errorCode).toBe(ErrorCodes.INVALID_RECORD)
      expect(g.responses[0].partitionResponses[0].baseOffset).toBe(next)
      next += 2n
    }
    // acks=0 has no response to carry the error: the bad connection is closed, nothing stored.
    bad.fireAndForget(ApiKeys.Produce, 9, produceReq('shared', [Buffer.from(garbage)], 0))
    await bad.closed
    const f = await fetchOne(good, 'shared', 0)
    expect(f.highWatermark).toBe(60n)
    expect(decodeRecordBatches(f.records)).toHaveLength(30)
  })

  it('never stores a batch a consumer cannot decode: 400 random CRC-valid mutations, plain and compressed', async () => {
    const { c } = await start()
    await createTopic(c, 'fuzz', 1)
    // xorshift32, seeded, so a failure replays.
    let x = 0x9e3779b9
    const rnd = (n: number) => {
      x ^= x << 13
      x ^= x >>> 17
      x ^= x << 5
      return (x >>> 0) % n
    }
    const base = makeBatch([{ value: 'a', key: 'k1' }, { value: 'bb' }, { value: Buffer.alloc(40, 1), key: 'key-three' }, { value: '' }])
    const body = base.subarray(61)
    let accepted = 0
    let stored = 0n
    for (let i = 0; i < 400; i++) {
      const mutated = Buffer.from(body)
      for (let k = 1 + rnd(3); k > 0; k--) mutated[rnd(mutated.length)] = rnd(256)
      const batch = await rawBatch({ records: [mutated], count: 4, compression: i % 2 === 0 ? undefined : 1 + rnd(4) })
      const r = await c.request(ApiKeys.Produce, 9, produceReq('fuzz', [batch]))
      const p = r.responses[0].partitionResponses[0]
      expect([0, ErrorCodes.INVALID_RECORD, ErrorCodes.INVALID_TIMESTAMP]).toContain(p.errorCode)
      if (p.errorCode === 0) {
        accepted++
        stored += 4n
      }
    }
    // Everything stored decodes, record by record, as four records per batch.
    let offset = 0n
    let decoded = 0n
    while (offset < stored) {
      const f = await c.request(ApiKeys.Fetch, 12, {
        replicaId: -1, maxWaitMs: 0, minBytes: 1, maxBytes: 1 << 20, isolationLevel: 0, sessionId: 0, sessionEpoch: -1,
        topics: [{ topic: 'fuzz', partitions: [{ partition: 0, fetchOffset: offset, partitionMaxBytes: 1 << 20, logStartOffset: -1n, currentLeaderEpoch: -1 }] }],
        forgottenTopicsData: [], rackId: '',
      })
      for (const b of decodeRecordBatches(f.responses[0].partitions[0].records)) {
        const records = b.toArray()
        expect(records.map((rec) => rec.offset)).toEqual([0n, 1n, 2n, 3n].map((d) => b.baseOffset + d))
        decoded += BigInt(records.length)
        offset = b.baseOffset + 4n
      }
    }
    expect(decoded).toBe(stored)
    // The mutations hit lengths and deltas often enough that most are refused, yet some (values) pass.
    expect(accepted).toBeGreaterThan(0)
    expect(accepted).toBeLessThan(400)
  })
})
