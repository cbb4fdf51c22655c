/** Runs a golden topology through our TopologyTestDriver as GoldenTopologies.java / JoinTopologies.java run it through Java's. */
import { readFileSync } from 'node:fs'
import { Serdes, TopologyTestDriver, type StreamsConfig, type Topology } from '@tidelog/streams'

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

/** How an output topic is read: 'string' / 'long' values with String keys, or the key as hex bytes (windowed keys). */
export type GoldenOutputType = 'string' | 'long' | { key: 'string' | 'hex'; value: 'string' | 'long' }

/**
 * The Java programs' config: String default serdes, wall clock from 1,000,000 ms, application.id
 * golden-app unless `config` says otherwise (more config, e.g. default.dsl.store, goes with it).
 */
export function runGoldenTopology(topology: Topology, spec: { outputs: { [topic: string]: GoldenOutputType }; steps: GoldenStep[] }, config: StreamsConfig = {}): { describe: string; outputs: GoldenOutputs; droppedRecords: number } {
  const driver = new TopologyTestDriver(topology, {
    'application.id': 'golden-app',
    'default.key.serde': Serdes.String(),
    'default.value.serde': Serdes.String(),
    ...config,
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
    for (const [topic, t] of Object.entries(spec.outputs)) {
      const type = typeof t === 'string' ? { key: 'string', value: t } : t
      const out = driver.createOutputTopic<unknown, unknown>(topic, type.key === 'hex' ? Serdes.ByteArray() : Serdes.String(), type.value === 'long' ? Serdes.Long() : Serdes.String())
      outputs[topic] = out.isEmpty() ? [] : out.readRecordsToList().map((r) => ({ key: r.key === null ? null : Buffer.isBuffer(r.key) ? r.key.toString('hex') : (r.key as string), value: r.value, timestamp: r.timestamp }))
    }
    const droppedRecords = driver.metrics().find((m) => m.name === 'dropped-records-total')!.value
    return { describe: topology.describe().toString(), outputs, droppedRecords }
  } finally {
    driver.close()
  }
}
