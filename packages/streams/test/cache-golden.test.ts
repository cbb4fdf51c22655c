import { describe, expect, it } from 'vitest'
import { readGolden, runGoldenTopology, type GoldenOutputType, type GoldenStep } from './helpers/golden-run.js'
import { buildCacheTopology } from './cache-topologies.js'

type Spec = { cacheMaxBytes: number; outputs: { [topic: string]: GoldenOutputType }; steps: GoldenStep[] }
type Golden = { kafkaStreamsVersion: string; topologies: { [name: string]: { describe: string; outputs: unknown } } }

const inputs = readGolden<{ [name: string]: Spec }>('cache-inputs.json')
const golden = readGolden<Golden>('cache-java-outputs.json')

describe(`record caches on: Kafka Streams ${golden.kafkaStreamsVersion}'s TopologyTestDriver outputs (CacheTopologies.java)`, () => {
  it('covers every topology in the inputs', () => {
    expect(Object.keys(golden.topologies)).toEqual(Object.keys(inputs))
  })
  // Java's stores are RocksDB here; the caching layer sits over our in-memory stores and over LMDB.
  for (const [label, config] of [['in memory', {}], ['persistent', { 'default.dsl.store': 'rocksDB' }]] as const) {
    for (const name of Object.keys(inputs)) {
      it(`${name}, stores ${label}: same describe() text and output records in order, with timestamps`, () => {
        const { describe, outputs } = runGoldenTopology(buildCacheTopology(name), inputs[name]!, { 'application.id': 'cache-app', 'statestore.cache.max.bytes': inputs[name]!.cacheMaxBytes, ...config })
        expect({ describe, outputs }).toEqual(golden.topologies[name])
      })
    }
  }
})
