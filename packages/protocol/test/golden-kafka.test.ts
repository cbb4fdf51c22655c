/**
 * Responses captured from real Apache Kafka brokers (see the first line of each
 * fixture; refreshed with TIDELOG_UPDATE_GOLDEN=1 npm run test:interop). Decoding
 * them and re-encoding must give Kafka's bytes back exactly: a shared mistake in
 * our encoder and decoder cannot hide here, because Kafka wrote the bytes.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import {
  ApiKeys,
  Reader,
  Writer,
  decodeRecordBatches,
  decodeRequestHeader,
  decodeResponseHeader,
  getApi,
  writeRequestHeader,
} from '@tidelog/protocol'

const root = fileURLToPath(new URL('./golden/kafka/', import.meta.url))
const fixtures = readdirSync(root).flatMap((kafka) =>
  readdirSync(`${root}${kafka}`).map((file) => {
    const m = /^(\w+)-v(\d+)-response\.hex$/.exec(file)
    if (!m) throw new Error(`unexpected fixture name ${file}`)
    const text = readFileSync(`${root}${kafka}/${file}`, 'utf8')
    const hex = text.split('\n').filter((l) => !l.startsWith('#')).join('')
    return { kafka, api: m[1]! as keyof typeof ApiKeys, version: Number(m[2]), bytes: Buffer.from(hex, 'hex') }
  }),
)

describe('golden responses from Apache Kafka', () => {
  it('has fixtures from both Kafka lines', () => {
    expect(new Set(fixtures.map((f) => f.kafka))).toEqual(new Set(['4.4.0', '4.0.2', '3.9.1']))
    expect(fixtures.length).toBeGreaterThanOrEqual(40)
  })

  it.each(fixtures.map((f) => [`${f.kafka} ${f.api} v${f.version}`, f] as const))('%s decodes and re-encodes byte for byte', (_, f) => {
    const api = getApi(ApiKeys[f.api])!
    const r = new Reader(f.bytes)
    const msg = api.decodeResponse(r, f.version)
    expect(r.remaining).toBe(0)
    const w = new Writer(16)
    api.encodeResponse(w, msg, f.version)
    expect(w.finish().toString('hex')).toBe(f.bytes.toString('hex'))
  })

  it('the captured Fetch responses carry the records the interop test produced', () => {
    for (const f of fixtures.filter((x) => x.api === 'Fetch')) {
      const msg = getApi(ApiKeys.Fetch)!.decodeResponse(new Reader(f.bytes), f.version)
      const partitions = msg.responses[0].partitions
      expect(partitions).toHaveLength(4)
      for (const p of partitions) {
        const records = decodeRecordBatches(p.records).flatMap((b) => b.toArray())
        expect(records).toHaveLength(50)
        expect(records[7]!.key!.toString()).toBe(`key-${p.partitionIndex}-7`)
      }
    }
  })

  it('ApiVersions from Kafka 4.4.0 lists the APIs tidelog generates', () => {
    const f = fixtures.find((x) => x.kafka === '4.4.0' && x.api === 'ApiVersions' && x.version === 3)!
    const msg = getApi(ApiKeys.ApiVersions)!.decodeResponse(new Reader(f.bytes), 3)
    const keys = new Set(msg.apiKeys.map((k: { apiKey: number }) => k.apiKey))
    for (const key of [0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 18, 19, 22]) expect(keys.has(key)).toBe(true)
  })
})

const javaRoot = fileURLToPath(new URL('./golden/java-client/', import.meta.url))
const javaFixtures = readdirSync(javaRoot).flatMap((release) =>
  readdirSync(`${javaRoot}${release}`).map((file) => {
    const m = /^(\w+)-v(\d+)-(request|response)\.hex$/.exec(file)
    if (!m) throw new Error(`unexpected fixture name ${file}`)
    const text = readFileSync(`${javaRoot}${release}/${file}`, 'utf8')
    const hex = text.split('\n').filter((l) => !l.startsWith('#')).join('')
    return { release, api: m[1]! as keyof typeof ApiKeys, version: Number(m[2]), kind: m[3]!, bytes: Buffer.from(hex, 'hex') }
  }),
)

describe('golden requests from the Java client (and Kafka answers to them)', () => {
  it.each(javaFixtures.map((f) => [`${f.release} ${f.api} v${f.version} ${f.kind}`, f] as const))('%s decodes and re-encodes byte for byte', (_, f) => {
    const api = getApi(ApiKeys[f.api])!
    const r = new Reader(f.bytes)
    const w = new Writer(16)
    if (f.kind === 'request') {
      const header = decodeRequestHeader(r)
      expect(header.apiKey).toBe(api.apiKey)
      expect(header.apiVersion).toBe(f.version)
      writeRequestHeader(w, header)
      api.encodeRequest(w, api.decodeRequest(r, f.version), f.version)
      expect(r.remaining).toBe(0)
      expect(w.finish().toString('hex')).toBe(f.bytes.toString('hex'))
    } else {
      decodeResponseHeader(r, api.apiKey, f.version)
      const start = r.pos
      api.encodeResponse(w, api.decodeResponse(r, f.version), f.version)
      expect(r.remaining).toBe(0)
      expect(w.finish().toString('hex')).toBe(f.bytes.subarray(start).toString('hex'))
    }
  })

  it("the Java producer's Produce request holds snappy batches (xerial-framed) that decode", () => {
    const f = javaFixtures.find((x) => x.api === 'Produce' && x.kind === 'request')!
    const r = new Reader(f.bytes)
    decodeRequestHeader(r)
    const req = getApi(ApiKeys.Produce)!.decodeRequest(r, f.version)
    expect(req.acks).toBe(-1)
    let records = 0
    for (const t of req.topicData) {
      for (const p of t.partitionData) {
        for (const batch of decodeRecordBatches(p.records)) {
          expect(batch.compression).toBe(2)
          expect(batch.producerId).toBeGreaterThanOrEqual(0n)
          expect(batch.baseSequence).toBeGreaterThanOrEqual(0)
          for (const rec of batch) {
            expect(rec.value).toHaveLength(100)
            records++
          }
        }
      }
    }
    expect(records).toBeGreaterThan(0)
  })
})
