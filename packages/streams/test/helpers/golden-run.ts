/** Runs a golden topology through our TopologyTestDriver as GoldenTopologies.java / JoinTopologies.java run it through Java's. */
import { readFileSync } from 'node:fs'
import { Serdes, TopologyTestDriver, type Topology } from '@tidelog/streams'

export interface GoldenStep { topic?: string; key?: string | null; value?: string | null; timestamp?: number; advanceWallClockMs?: number }
export interface GoldenSpec { outputs: { [topic: string]: 'string' | 'long' }; steps: GoldenStep[] }
export type GoldenOutputs = { [topic: string]: { key: string | null; value: unknown; timestamp: number }[] }
export interface GoldenFile {
  kafkaStreamsVersion: string
  topologies: { [name: string]: { describe: string; outputs: GoldenOutputs } }
}

export function readGolden<T>(file: string): T {
  return JSON.parse(readFileSync(new URL(`../golden/${file}`, import.meta.url), 'utf8')) as T
}

/** The Java programs' config: application.id golden-app, String default serdes, wall clock from 1,000,000 ms. */
export function runGoldenTopology(topology: Topology, spec: GoldenSpec): { describe: string; outputs: GoldenOutputs } {
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
    const outputs: GoldenOutputs = {}
    for (const [topic, type] of Object.entries(spec.outputs)) {
      const out = driver.createOutputTopic<string, unknown>(topic, Serdes.String(), type === 'long' ? Serdes.Long() : Serdes.String())
      outputs[topic] = out.isEmpty() ? [] : out.readRecordsToList().map((r) => ({ key: r.key, value: r.value, timestamp: r.timestamp }))
    }
    return { describe: topology.describe().toString(), outputs }
  } finally {
    driver.close()
  }
}
