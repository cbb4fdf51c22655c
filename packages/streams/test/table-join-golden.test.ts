import { describe, expect, it } from 'vitest'
import { readGolden, runGoldenTopology, type GoldenFile, type GoldenSpec } from './helpers/golden-run.js'
import { buildJoinGolden } from './join-topologies.js'

const inputs = readGolden<{ [name: string]: GoldenSpec }>('joins-inputs.json')
const golden = readGolden<GoldenFile>('joins-java-outputs.json')

describe(`join golden outputs of Kafka Streams ${golden.kafkaStreamsVersion}'s TopologyTestDriver`, () => {
  it('covers every join topology in the inputs', () => {
    expect(Object.keys(golden.topologies)).toEqual(Object.keys(inputs))
  })
  for (const name of Object.keys(inputs)) {
    it(`${name}: same describe() text and the same output records, in order`, () => {
      const ours = runGoldenTopology(buildJoinGolden(name), inputs[name]!)
      expect(ours.describe).toBe(golden.topologies[name]!.describe)
      expect(ours.outputs).toEqual(golden.topologies[name]!.outputs)
    })
  }
})
