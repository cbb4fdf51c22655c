import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { buildWindowTopology } from './windows-topologies.js'
import { runGoldenTopology } from './helpers/golden-run.js'

interface Step { topic?: string; key?: string | null; value?: string | null; timestamp?: number; advanceWallClockMs?: number }
interface Spec { outputs: { [topic: string]: { key: 'string' | 'hex'; value: 'string' | 'long' } }; steps: Step[] }
type Outputs = { [topic: string]: { key: string | null; value: unknown; timestamp: number }[] }
interface Golden {
  kafkaStreamsVersion: string
  topologies: { [name: string]: { describe: string; outputs: Outputs; droppedRecords: number } }
}

const inputs = JSON.parse(readFileSync(new URL('./golden/windows-inputs.json', import.meta.url), 'utf8')) as { [name: string]: Spec }
const golden = JSON.parse(readFileSync(new URL('./golden/windows-java-outputs.json', import.meta.url), 'utf8')) as Golden

/** Runs one topology through our driver with the Java program's config; windowed keys are compared as the hex of their bytes. */
function run(name: string, spec: Spec) {
  return runGoldenTopology(buildWindowTopology(name), spec, { 'application.id': 'windows-app' })
}

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
