import { describe, expect, it } from 'vitest'
import { readGolden, runGoldenTopology, type GoldenOutputType, type GoldenStep } from './helpers/golden-run.js'
import { buildVersionedTopology } from './versioned-topologies.js'

type Spec = { outputs: { [topic: string]: GoldenOutputType }; steps: GoldenStep[] }
type Golden = { kafkaStreamsVersion: string; topologies: { [name: string]: { describe: string; outputs: unknown; droppedRecords: number } } }

const inputs = readGolden<{ [name: string]: Spec }>('versioned-inputs.json')
const golden = readGolden<Golden>('versioned-java-outputs.json')

/**
 * The versioned store sits on LMDB either way (Kafka 4.4 has no in-memory versioned store); the
 * second run makes every other DSL store of the topology persistent too.
 */
const runs: [string, { [k: string]: string }][] = [
  ['other stores in memory', {}],
  ["other stores persistent (default.dsl.store: 'rocksDB')", { 'default.dsl.store': 'rocksDB' }],
]

describe(`versioned stores and grace joins: Kafka Streams ${golden.kafkaStreamsVersion}'s TopologyTestDriver outputs (VersionedTopologies.java)`, () => {
  it('covers every topology in the inputs', () => {
    expect(Object.keys(golden.topologies)).toEqual(Object.keys(inputs))
  })
  for (const [label, config] of runs) {
    for (const name of Object.keys(inputs)) {
      it(`${name}, ${label}: same describe() text, output records in order and dropped-records count`, () => {
        const ours = runGoldenTopology(buildVersionedTopology(name), inputs[name]!, { 'application.id': 'versioned-app', ...config })
        expect(ours).toEqual(golden.topologies[name])
      })
    }
  }
})
