import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { runWindowGolden, type WindowGoldenResult, type WindowGoldenSpec } from './helpers/golden-windows-run.js'
import { buildWindowTopology } from './windows-topologies.js'

interface Golden {
  kafkaStreamsVersion: string
  topologies: { [name: string]: WindowGoldenResult }
}

const inputs = JSON.parse(readFileSync(new URL('./golden/windows-inputs.json', import.meta.url), 'utf8')) as { [name: string]: WindowGoldenSpec }
const golden = JSON.parse(readFileSync(new URL('./golden/windows-java-outputs.json', import.meta.url), 'utf8')) as Golden

/** Runs one topology through our driver with the Java program's config; windowed keys are compared as the hex of their bytes. */
const run = (name: string, spec: WindowGoldenSpec) => runWindowGolden(buildWindowTopology(name), spec, 'windows-app')

describe(`windows, suppress and stream-stream joins: Kafka Streams ${golden.kafkaStreamsVersion}'s TopologyTestDriver outputs`, () => {
  it('covers every topology in the inputs', () => {
    expect(Object.keys(golden.topologies)).toEqual(Object.keys(inputs))
  })
  for (const name of Object.keys(inputs)) {
    it(`${name}: same describe() text, output records in order, and dropped-records count`, () => {
      const ours = run(name, inputs[name]!)
      const java = golden.topologies[name]!
      expect(ours.describe).toBe(java.describe)
      expect(ours.outputs).toEqual(java.outputs)
      expect(ours.droppedRecords).toBe(java.droppedRecords)
    })
  }
})
