import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { Serdes, TopologyTestDriver, type Topology } from '@tidelog/streams'
import { buildJoinGolden } from './join-topologies.js'

interface Step { topic?: string; key?: string | null; value?: string | null; timestamp?: number; advanceWallClockMs?: number }
interface Spec { outputs: { [topic: string]: 'string' | 'long' }; steps: Step[] }
interface Golden {
  kafkaStreamsVersion: string
  topologies: { [name: string]: { describe: string; outputs: { [topic: string]: { key: string | null; value: unknown; timestamp: number }[] } } }
}

const inputs = JSON.parse(readFileSync(new URL('./golden/joins-inputs.json', import.meta.url), 'utf8')) as { [name: string]: Spec }
const golden = JSON.parse(readFileSync(new URL('./golden/joins-java-outputs.json', import.meta.url), 'utf8')) as Golden

/** Runs one topology through our TopologyTestDriver with JoinTopologies.java's config (caching off is all we have). */
function run(topology: Topology, spec: Spec) {
  const driver = new TopologyTestDriver(topology, { 'application.id': 'golden-app', 'default.key.serde': Serdes.String(), 'default.value.serde': Serdes.String() }, 1_000_000)
  try {
    for (const step of spec.steps) {
      if (step.advanceWallClockMs !== undefined) driver.advanceWallClockTime(step.advanceWallClockMs)
      else driver.createInputTopic(step.topic!, Serdes.String(), Serdes.String()).pipeInput(step.key ?? null, step.value ?? null, step.timestamp!)
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

describe(`join golden outputs of Kafka Streams ${golden.kafkaStreamsVersion}'s TopologyTestDriver`, () => {
  it('covers every join topology in the inputs', () => {
    expect(Object.keys(golden.topologies)).toEqual(Object.keys(inputs))
  })
  for (const name of Object.keys(inputs)) {
    it(`${name}: same describe() text and the same output records, in order`, () => {
      const ours = run(buildJoinGolden(name), inputs[name]!)
      expect(ours.describe).toBe(golden.topologies[name]!.describe)
      expect(ours.outputs).toEqual(golden.topologies[name]!.outputs)
    })
  }
})
