import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { runWindowGolden, type WindowGoldenResult, type WindowGoldenSpec } from './helpers/golden-windows-run.js'
import { buildWindows2Topology } from './windows2-topologies.js'

const inputs = JSON.parse(readFileSync(new URL('./golden/windows2-inputs.json', import.meta.url), 'utf8')) as { [name: string]: WindowGoldenSpec }
const golden = JSON.parse(readFileSync(new URL('./golden/windows2-java-outputs.json', import.meta.url), 'utf8')) as { kafkaStreamsVersion: string; topologies: { [name: string]: WindowGoldenResult } }

describe(`withRetention, emit strategies and cogroup: Kafka Streams ${golden.kafkaStreamsVersion}'s TopologyTestDriver outputs (MoreWindowTopologies.java)`, () => {
  it('covers every topology in the inputs', () => {
    expect(Object.keys(golden.topologies)).toEqual(Object.keys(inputs))
  })
  for (const name of Object.keys(inputs)) {
    it(`${name}: same describe() text, output records in order, dropped-records count and final store contents`, () => {
      expect(runWindowGolden(buildWindows2Topology(name), inputs[name]!, 'windows2-app')).toEqual(golden.topologies[name])
    })
  }
})
