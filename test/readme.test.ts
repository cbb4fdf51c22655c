import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { readmePath, readmeWithTable } from '../scripts/readme-api-table.js'
import { compatRows, kafkaVersionsOnRecord, missingTests, readmeWithCompatTable, resolveRows } from '../scripts/compat-matrix.js'
import { readRecords } from './helpers/peer-record.js'

const root = fileURLToPath(new URL('../', import.meta.url))
const readme = () => readFileSync(readmePath, 'utf8')

it('the README API table matches the codec and broker registries (npx tsx scripts/readme-api-table.ts --write)', () => {
  expect(readmeWithTable(readme())).toBe(readme())
})

describe('the README compatibility table is what the tests recorded (test/interop/peers/)', () => {
  const records = readRecords()

  it('every row names tests that exist', () => {
    expect(missingTests()).toEqual([])
  })

  it('every peer a row claims was recorded by one of its tests', () => {
    expect(resolveRows(records).problems).toEqual([])
  })

  it('every record belongs to a test file that exists and that a row cites', () => {
    const cited = new Set(compatRows.flatMap((r) => r.tests))
    for (const [file, rs] of records) {
      expect(existsSync(`${root}${file}`), `${file} is gone; delete its record`).toBe(true)
      expect(cited.has(file), `${file} records peers but no row cites it`).toBe(true)
      expect(rs.length, `${file}'s record is empty`).toBeGreaterThan(0)
    }
  })

  it('the table equals the one built from the record (npx tsx scripts/compat-matrix.ts --write)', () => {
    expect(readmeWithCompatTable(readme(), records)).toBe(readme())
  })

  it('the top claim names exactly the Apache Kafka releases on record', () => {
    const claim = /the clients work against Apache Kafka [^(]*\(the interop suite runs ([^)]*)\)/.exec(readme().replace(/\s+/g, ' '))
    expect(claim, 'README.md: "the clients work against Apache Kafka ... (the interop suite runs X, Y and Z)"').not.toBeNull()
    const named = claim![1]!.split(/,\s*|\s+and\s+/).map((v) => v.trim()).filter(Boolean)
    expect([...named].sort()).toEqual([...kafkaVersionsOnRecord(records)].sort())
  })
})

describe("the README's librdkafka line is what the last runs recorded (test/librdkafka/*-results.txt)", () => {
  const summary = (file: string) => {
    const text = readFileSync(fileURLToPath(new URL(`./librdkafka/${file}`, import.meta.url)), 'utf8')
    const m = /^# (\d+) passed, (\d+) failed, (\d+) skipped/m.exec(text)
    expect(m, `${file}: a "# N passed, N failed, N skipped" line`).not.toBeNull()
    const [passed, failed, skipped] = m!.slice(1).map(Number) as [number, number, number]
    return { passed, total: passed + failed + skipped }
  }

  it('names the pass counts of our broker and of Apache Kafka in the same harness', () => {
    const ours = summary('tidelog-results.txt')
    const kafka = summary('kafka-results.txt')
    const text = readme().replace(/\s+/g, ' ')
    expect(text).toContain(`${ours.passed} of its ${ours.total} tests that use a broker pass on tidelog-broker`)
    expect(text).toContain(`Apache Kafka 4.4.0 on one node in the same harness passes ${kafka.passed}`)
  })

  it('names the pass count of the SASL pass (test/librdkafka/sasl.ts)', () => {
    const text = readFileSync(fileURLToPath(new URL('./librdkafka/tidelog-results.txt', import.meta.url)), 'utf8')
    const m = /^# (\d+) passed, \d+ failed, \d+ skipped of (\d+) runs/m.exec(text)
    expect(m, 'tidelog-results.txt: the SASL pass line "# N passed, N failed, N skipped of N runs"').not.toBeNull()
    expect(readme().replace(/\s+/g, ' ')).toContain(`against a SASL_SSL listener, ${m![1]} of its ${m![2]} runs pass`)
  })
})
