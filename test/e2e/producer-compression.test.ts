/**
 * Every codec the runtime can compress with, written to the tidelog broker and read back
 * through the codec: the batches carry the codec's id, and every record comes back intact.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CompressionName } from '@tidelog/protocol'
import { Producer } from '@tidelog/producer'
import { startTestBroker, type TestBroker } from '../../packages/producer/test/broker.js'
import { readTopic } from '../../packages/producer/test/helpers.js'

// zstd on every Node version: node:zlib's where it has one, else the pure-JS compressor.
const codecs: [CompressionName, number][] = [['none', 0], ['gzip', 1], ['snappy', 2], ['lz4', 3], ['zstd', 4]]

describe('compressed batches on the tidelog broker', () => {
  let b: TestBroker
  beforeAll(async () => {
    b = await startTestBroker({ numPartitions: 2 })
  })
  afterAll(async () => {
    await b.close()
  })

  for (const [name, id] of codecs) {
    it(`${name}: batches carry codec ${id} and read back intact`, async () => {
      const p = new Producer({ brokers: [b.bootstrap], compression: name })
      const topic = `codec-${name}`
      const records = Array.from({ length: 3_000 }, (_, i) => ({
        topic,
        key: `key-${i % 50}`,
        value: `value ${i} ${'abcdefghij'.repeat(i % 20)}`,
        headers: { n: String(i) },
      }))
      const results = await p.send(records)
      await p.close()
      const read = (await readTopic('127.0.0.1', b.broker.port, topic, 2, records.length)).flat()
      expect(read).toHaveLength(records.length)
      expect(new Set(read.map((r) => r.compression))).toEqual(new Set([id]))
      const byN = new Map(read.map((r) => [r.headers[0]!.value, r]))
      for (let i = 0; i < records.length; i++) {
        const r = byN.get(String(i))!
        expect(r.value).toBe(records[i]!.value)
        expect(r.key).toBe(records[i]!.key)
        expect(r.partition).toBe(results[i]!.partition)
        expect(r.offset).toBe(results[i]!.offset)
      }
    })
  }
})
