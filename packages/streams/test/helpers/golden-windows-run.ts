/**
 * Runs a window golden topology through our TopologyTestDriver as GoldenDriver.java runs it
 * through Java's (WindowTopologies.java, MoreWindowTopologies.java): hex keys for windowed
 * serdes, the task's dropped-records-total, and the final contents of the stores a spec names.
 */
import { Serdes, TopologyTestDriver, type Topology, type Windowed } from '@tidelog/streams'
import type { GoldenOutputs, GoldenStep } from './golden-run.js'

export interface WindowGoldenSpec {
  outputs: { [topic: string]: { key: 'string' | 'hex'; value: 'string' | 'long' } }
  steps: GoldenStep[]
  windowStores?: string[]
  sessionStores?: string[]
}
export interface WindowGoldenResult {
  describe: string
  outputs: GoldenOutputs
  droppedRecords: number
  windowStores?: { [store: string]: string[] }
  sessionStores?: { [store: string]: string[] }
}

const at = (w: Windowed<unknown>) => `${String(w.key)}@${w.window.start}/${w.window.end}`
/** Java's sort of the printed entries: natural String order, by UTF-16 code units, as JS's default sort. */
const sorted = (xs: string[]) => xs.sort()

export function runWindowGolden(topology: Topology, spec: WindowGoldenSpec, applicationId: string): WindowGoldenResult {
  const driver = new TopologyTestDriver(topology, { 'application.id': applicationId, 'default.key.serde': Serdes.String(), 'default.value.serde': Serdes.String() }, 1_000_000)
  try {
    for (const step of spec.steps) {
      if (step.advanceWallClockMs !== undefined) driver.advanceWallClockTime(step.advanceWallClockMs)
      else driver.createInputTopic(step.topic!, Serdes.String(), Serdes.String()).pipeInput(step.key ?? null, step.value ?? null, step.timestamp!)
    }
    const outputs: GoldenOutputs = {}
    for (const [topic, type] of Object.entries(spec.outputs)) {
      const out = driver.createOutputTopic<unknown, unknown>(topic, type.key === 'hex' ? Serdes.ByteArray() : Serdes.String(), type.value === 'long' ? Serdes.Long() : Serdes.String())
      outputs[topic] = out.isEmpty() ? [] : out.readRecordsToList().map((r) => ({ key: r.key === null ? null : Buffer.isBuffer(r.key) ? r.key.toString('hex') : (r.key as string), value: r.value, timestamp: r.timestamp }))
    }
    const result: WindowGoldenResult = { describe: topology.describe().toString(), outputs, droppedRecords: driver.metrics().find((m) => m.name === 'dropped-records-total')!.value }
    if (spec.windowStores) {
      result.windowStores = Object.fromEntries(spec.windowStores.map((name) =>
        [name, sorted(driver.getTimestampedWindowStore<string, unknown>(name)!.all().map((e) => `${at(e.key)}=${String(e.value.value)}@${e.value.timestamp}`))]))
    }
    if (spec.sessionStores) {
      result.sessionStores = Object.fromEntries(spec.sessionStores.map((name) =>
        [name, sorted(driver.getSessionStore<string, unknown>(name)!.findSessions(undefined, undefined, 0, Number.MAX_SAFE_INTEGER).map((e) => `${at(e.key)}=${String(e.value)}`))]))
    }
    return result
  } finally {
    driver.close()
  }
}
