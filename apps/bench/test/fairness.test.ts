import { describe, expect, it } from 'vitest'
import { BEST, CLIENT_DEFAULT_IN_FLIGHT, LIKE_CAVEATS } from '../src/clients/best.js'
import { makeRecords } from '../src/clients/records.js'
import { checkGoals } from '../src/goals.js'
import type { TrialOutcome } from '../src/matrix.js'
import { select } from '../src/registry.js'
import { markdown, type Report } from '../src/report.js'
import { entryOf, FAILED, makeRow } from '../src/rows.js'
import { BASE, CONTENDERS, fasterModeRows, pick } from '../src/scenarios/clients.js'
import { summarize } from '../src/stats.js'
import type { RunContext } from '../src/types.js'

const s = (...runs: number[]) => summarize(runs)
const ctx = (o: Partial<RunContext>) => ({ quick: false, only: undefined, ...o }) as RunContext

describe('contenders and settings', () => {
  it('--quick leaves out the peers from the bench cache unless --clients names them', () => {
    expect(pick(ctx({}), CONTENDERS)).toEqual(CONTENDERS)
    expect(pick(ctx({ quick: true }), CONTENDERS)).toEqual(['tidelog', 'kafkajs', 'platformatic', 'tidelog-kafkajs', 'java'])
    expect(pick(ctx({ quick: true, clients: new Set(['platformatic-2', 'tidelog-node22']) }), CONTENDERS)).toEqual(['platformatic-2', 'tidelog-node22'])
  })

  it('every contender has best settings that keep the scenario\'s acks, idempotence and compression', () => {
    const p2 = { ...BASE, acks: -1 as const, idempotent: true, compression: 'gzip' as const }
    for (const c of CONTENDERS) {
      const t = BEST[c].tune(p2)
      expect([c, t.acks, t.idempotent, t.compression]).toEqual([c, -1, true, 'gzip'])
      // Idempotence allows at most 5 requests in flight (Java, librdkafka) and 1 in kafkajs.
      expect(t.maxInFlight === CLIENT_DEFAULT_IN_FLIGHT || t.maxInFlight > 5).toBe(false)
      expect(BEST[c].source.length).toBeGreaterThan(10)
    }
    expect(BEST.kafkajs.tune(BASE).maxInFlight).toBe(CLIENT_DEFAULT_IN_FLIGHT)
    expect(BEST.java.tune(BASE)).toMatchObject({ batchBytes: 200_000, lingerMs: 50 })
    expect(LIKE_CAVEATS.kafkajs!(p2)).toMatch(/1 request in flight/)
  })

  it('a --quick run without names leaves the scale suite out; named, it runs', () => {
    const names = (x: ReturnType<typeof select>) => (x as Exclude<typeof x, string>).map((y) => y.suite.name)
    expect(names(select([], undefined, true))).not.toContain('scale')
    expect(names(select([]))).toContain('scale')
    expect(names(select(['scale'], undefined, true))).toEqual(['scale'])
    expect(names(select(['B1'], undefined, true))).toEqual(['scale'])
  })
})

describe('failed contenders and the faster consume mode', () => {
  it('a contender that failed a round is shown as failed, not as its surviving rounds', () => {
    const o: TrialOutcome = { metrics: new Map([['rate', s(100, 120)]]), error: 'broke in round 3' }
    expect(entryOf(o, 'rate')).toBe(`${FAILED}broke in round 3`)
    const row = makeRow({ id: 'P1@x', title: 't', unit: 'records/s', higherIsBetter: true }, [['tidelog', s(500)], ['kafkajs', entryOf(o, 'rate')]])
    expect(row.ratios).toEqual({})
    const report: Report = {
      date: '2026-01-01T00:00:00.000Z',
      machine: { cpus: 2, cpuModel: 'cpu', memory: '1 GiB', node: 'v20' },
      command: 'npm run bench',
      timing: { rounds: 3, windowMs: 1, warmupMs: 1, mode: 'quick', endToEndRounds: 1 },
      provenance: { commit: '0123456789abcdef', dirty: true, peers: { kafkajs: '2.2.4' } },
      scenarios: [row, makeRow({ id: 'P2@x', title: 't', unit: 'records/s', higherIsBetter: true }, [['tidelog', s(1)], ['kafkajs', 'no broker']])],
      goals: [],
    }
    const md = markdown(report)
    expect(md).toContain('| failed [1] |')
    expect(md).toContain('| n/a [2] |')
    expect(md).toContain('Commit 0123456789ab with uncommitted changes; peers: kafkajs 2.2.4')
  })

  it('C1.best takes each client\'s faster mode, and a failure in either mode as a failure', () => {
    const head = (id: string) => ({ id, title: 't', unit: 'records/s', higherIsBetter: true })
    const perMessage = [makeRow(head('C1@tidelog-broker'), [['tidelog', s(300)], ['kafkajs', s(100)], ['platformatic', s(50)], ['confluent', s(40)]])]
    const batch = [makeRow(head('C1.batch@tidelog-broker'), [['tidelog', s(900)], ['kafkajs', s(150)], ['confluent', `${FAILED}timed out`]])]
    const [best] = fasterModeRows(perMessage, batch, 1000)
    expect(best!.id).toBe('C1.best@tidelog-broker')
    expect(best!.results.tidelog!.median).toBe(900)
    expect(best!.results.kafkajs!.median).toBe(150)
    expect(best!.results.platformatic!.median).toBe(50)
    expect(best!.unavailable).toEqual({ confluent: `${FAILED}timed out` })
    expect(best!.ratios['tidelog/kafkajs']).toBe(6)
    expect(best!.notes![0]).toMatch(/tidelog: eachBatch, kafkajs: eachBatch/)
    const goal = checkGoals([best!]).find((g) => g.goal.startsWith('tidelog producer and consumer >= 5x kafkajs'))!
    expect(goal).toMatchObject({ measured: ['C1.best@tidelog-broker: 6x'], met: true })
  })

  it('goals compare tidelog with @platformatic/kafka 2.x on the same Node 22', () => {
    const row = makeRow({ id: 'P1@tidelog-broker', title: 't', unit: 'records/s', higherIsBetter: true }, [['tidelog-node22', s(300)], ['platformatic-2', s(100)]])
    const goal = checkGoals([row]).find((g) => g.goal.includes('2.x'))!
    expect(goal).toMatchObject({ measured: ['P1@tidelog-broker: 3x'], met: true })
  })
})

describe('large records', () => {
  it('values of the asked size from a pool, keys distinct, small records unchanged', () => {
    const big = makeRecords(40, 1, 100 * 1024)
    expect(big.every((r) => r.value.length === 100 * 1024 && r.key.length === 10)).toBe(true)
    expect(new Set(big.map((r) => r.value)).size).toBe(16)
    expect(new Set(big.map((r) => r.key.toString())).size).toBe(40)
    expect(makeRecords(20)).toEqual(makeRecords(20, 1, 100))
  })
})
