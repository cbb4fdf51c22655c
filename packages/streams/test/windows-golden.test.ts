import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { Serdes, TopologyTestDriver } from '@tidelog/streams'
import { buildWindowTopology } from './windows-topologies.js'

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
  const topology = buildWindowTopology(name)
  const driver = new TopologyTestDriver(topology, { 'application.id': 'windows-app', 'default.key.serde': Serdes.String(), 'default.value.serde': Serdes.String() }, 1_000_000)
  try {
    for (const step of spec.steps) {
      if (step.advanceWallClockMs !== undefined) driver.advanceWallClockTime(step.advanceWallClockMs)
      else driver.createInputTopic(step.topic!, Serdes.String(), Serdes.String()).pipeInput(step.key ?? null, step.value ?? null, step.timestamp!)
    }
    const outputs: Outputs = {}
    for (const [topic, type] of Object.entries(spec.outputs)) {
      const out = driver.createOutputTopic<unknown, unknown>(topic, type.key === 'hex' ? Serdes.ByteArray() : Serdes.String(), type.value === 'long' ? Serdes.Long() : Serdes.String())
      outputs[topic] = out.isEmpty() ? [] : out.readRecordsToList().map((r) => ({ key: r.key === null ? null : Buffer.isBuffer(r.key) ? r.key.toString('hex') : (r.key as string), value: r.value, timestamp: r.timestamp }))
    }
    const dropped = driver.metrics().find((m) => m.name === 'dropped-records-total')!.value
    return { describe: topology.describe().toString(), outputs, droppedRecords: dropped }
  } finally {
    driver.close()
  }
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
