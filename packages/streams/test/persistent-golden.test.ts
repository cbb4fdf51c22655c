import { describe, expect, it } from 'vitest'
import { buildGolden } from './golden-topologies.js'
import { buildJoinGolden } from './join-topologies.js'
import { buildWindowTopology } from './windows-topologies.js'
import { readGolden, runGoldenTopology, type GoldenFile, type GoldenOutputType, type GoldenStep } from './helpers/golden-run.js'
import type { Topology } from '@tidelog/streams'

type Spec = { outputs: { [topic: string]: GoldenOutputType }; steps: GoldenStep[] }
type Golden = GoldenFile & { topologies: { [name: string]: { droppedRecords?: number } } }

/**
 * Every golden topology again, with `default.dsl.store: 'rocksDB'` (Java's default): each DSL
 * key-value, window and session store is then persistent (LMDB), and the output records must
 * still be exactly what Kafka Streams' TopologyTestDriver printed. Persistence must change nothing
 * a topology emits; only caching may.
 */
const sets: [string, string, string, (name: string) => Topology, string][] = [
  ['core', 'inputs.json', 'java-outputs.json', buildGolden, 'golden-app'],
  ['joins', 'joins-inputs.json', 'joins-java-outputs.json', buildJoinGolden, 'golden-app'],
  ['windows', 'windows-inputs.json', 'windows-java-outputs.json', buildWindowTopology, 'windows-app'],
]

describe("golden topologies on persistent stores (default.dsl.store: 'rocksDB')", () => {
  for (const [set, inputsFile, goldenFile, build, applicationId] of sets) {
    const inputs = readGolden<{ [name: string]: Spec }>(inputsFile)
    const golden = readGolden<Golden>(goldenFile)
    it(`${set}: every topology's output records and dropped count are Java's`, () => {
      for (const name of Object.keys(inputs)) {
        const ours = runGoldenTopology(build(name), inputs[name]!, { 'application.id': applicationId, 'default.dsl.store': 'rocksDB' })
        expect({ name, outputs: ours.outputs }).toEqual({ name, outputs: golden.topologies[name]!.outputs })
        if (golden.topologies[name]!.droppedRecords !== undefined) expect(ours.droppedRecords).toBe(golden.topologies[name]!.droppedRecords)
      }
    })
  }
})
