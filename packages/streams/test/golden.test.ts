import { describe, expect, it } from 'vitest'
import { buildGolden } from './golden-topologies.js'
import { readGolden, runGoldenTopology, type GoldenFile, type GoldenSpec } from './helpers/golden-run.js'

const inputs = readGolden<{ [name: string]: GoldenSpec }>('inputs.json')
const golden = readGolden<GoldenFile>('java-outputs.json')

/** Runs one golden topology through our TopologyTestDriver with the Java program's config. */
export function runGolden(name: string, spec: GoldenSpec) {
  return runGoldenTopology(buildGolden(name), spec)
}

describe(`golden outputs of Kafka Streams ${golden.kafkaStreamsVersion}'s TopologyTestDriver`, () => {
  it('covers every topology in the inputs', () => {
    expect(Object.keys(golden.topologies)).toEqual(Object.keys(inputs))
  })
  for (const name of Object.keys(inputs)) {
    it(`${name}: same describe() text and the same output records, in order`, () => {
      const ours = runGolden(name, inputs[name]!)
      expect(ours.describe).toBe(golden.topologies[name]!.describe)
      expect(ours.outputs).toEqual(golden.topologies[name]!.outputs)
    })
  }
})
