import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { Serdes, TopologyTestDriver } from '@tidelog/streams'
import { buildGolden } from './golden-topologies.js'

interface Step { topic?: string; key?: string | null; value?: string | null; timestamp?: number; advanceWallClockMs?: number }
interface Spec { outputs: { [topic: string]: 'string' | 'long' }; steps: Step[] }
interface Golden {
  kafkaStreamsVersion: string
  topologies: { [name: string]: { describe: string; outputs: { [topic: string]: { key: string | null; value: unknown; timestamp: number }[] } } }
}

const inputs = JSON.parse(readFileSync(new URL('./golden/inputs.json', import.meta.url), 'utf8')) as { [name: string]: Spec }
const golden = JSON.parse(readFileSync(new URL('./golden/java-outputs.json', import.meta.url), 'utf8')) as Golden

/** Runs one golden topology through our TopologyTestDriver with the Java program's config. */
export function runGolden(name: string, spec: Spec) {
  const topology = buildGolden(name)
  const driver = new TopologyTestDriver(topology, {
    'application.id': 'golden-app',
    'default.key.serde': Serdes.String(),
    'default.value.serde': Serdes.String(),
  }, 1_000_000)
  try {
    for (const step of spec.steps) {
      if (step.advanceWallClockMs !== undefined) {
        driver.advanceWallClockTime(step.advanceWallClockMs)
        continue
      }
      driver.createInputTopic(step.topic!, Serdes.String(), Serdes.String()).pipeInput(step.key ?? null, step.value ?? null, step.timestamp!)
    }
    const outputs: Golden['topologies'][string]['outputs'] = {}
    for (const [topic, type] of Object.entries(spec.outputs)) {
      const out = driver.createOutputTopic<string, unknown>(topic, Serdes.String(), type === 'long' ? Serdes.Long() : Serdes.String())
      outputs[topic] = out.isEmpty() ? [] : out.readRecordsToList().map((r) => ({ key: r.key, value: r.value, timestamp: r.timestamp }))
    }
    return { describe: topology.describe().toString(), outputs }
  } finally {
    driver.close()
  }
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
