import { describe, expect, it } from 'vitest'
import { makeRecords } from '../src/clients/records.js'
import { checkGoals } from '../src/goals.js'
import { interleave } from '../src/matrix.js'
import { SUITES, select } from '../src/registry.js'
import { markdown, type Report } from '../src/report.js'
import { makeRow } from '../src/rows.js'
import { summarize } from '../src/stats.js'

describe('scenario registry', () => {
  it('has every scenario of the issue, each id in exactly one suite', () => {
    const ids = SUITES.flatMap((s) => s.ids)
    expect(new Set(ids).size).toBe(ids.length)
    expect([...ids].sort()).toEqual(['B1', 'B2', 'B3', 'B4', 'B5', 'B6', 'C1', 'CL1', 'K1', 'L1', 'L2', 'M1', 'P1', 'P2', 'P3', 'Q1', 'S1', 'ST1', 'ST2', 'ST3', 'ST4', 'T1', 'T2', 'X1'])
    for (const s of SUITES) {
      expect(s.name).toMatch(/^[a-z]+$/)
      expect(s.description.length).toBeGreaterThan(10)
      expect(s.scenarios !== undefined || s.run !== undefined).toBe(true)
    }
  })

  it('selects suites by name and scenarios by id, in registry order', () => {
    const all = select([])
    expect(typeof all).not.toBe('string')
    expect((all as Exclude<typeof all, string>).map((x) => x.suite.name)).toEqual(SUITES.map((s) => s.name))
    const some = select(['p2', 'codec', 'P1', 'latency'])
    expect(typeof some).not.toBe('string')
    const picked = some as Exclude<typeof some, string>
    expect(picked.map((x) => x.suite.name)).toEqual(['codec', 'produce', 'latency'])
    expect(picked[0]!.only).toBeUndefined()
    expect([...picked[1]!.only!].sort()).toEqual(['P1', 'P2'])
    expect(picked[2]!.only).toBeUndefined()
    expect(select(['P9'])).toMatch(/unknown/)
  })

  it('accepts the names the issues use: producer and consumer', () => {
    const picked = select(['producer', 'consumer']) as Exclude<ReturnType<typeof select>, string>
    expect(picked.map((x) => x.suite.name)).toEqual(['produce', 'consume'])
    // ST1 (streams) and S1 (broker start-up) are different suites.
    const st = select(['ST1', 'S1']) as Exclude<ReturnType<typeof select>, string>
    expect(st.map((x) => [x.suite.name, [...x.only!]])).toEqual([['startup', ['S1']], ['streams', ['ST1']]])
  })

  it('the codec suite builds its scenarios, and each implementation runs', async () => {
    const codec = SUITES.find((s) => s.name === 'codec')!
    const scenarios = await codec.scenarios!()
    expect(scenarios.map((s) => s.id)).toEqual(Array.from({ length: 9 }, (_, i) => `K1.${i + 1}`))
    for (const s of scenarios) {
      expect(s.impls[0]!.name).toBe('tidelog')
      for (const impl of s.impls) expect(await impl.run()).toBeGreaterThan(0)
    }
  })
})

describe('rows and report', () => {
  const s = (...runs: number[]) => summarize(runs)

  it('ratios say how many times better the first did, whichever way is better', () => {
    const up = makeRow({ id: 'P1@x', title: 't', unit: 'records/s', higherIsBetter: true }, [['tidelog', s(600)], ['kafkajs', s(100)], ['java', 'no JVM here']])
    expect(up.ratios).toEqual({ 'tidelog/kafkajs': 6 })
    expect(up.unavailable).toEqual({ java: 'no JVM here' })
    const down = makeRow({ id: 'S1', title: 't', unit: 'ms', higherIsBetter: false }, [['tidelog-broker', s(100)], ['kafka', s(5000)]])
    expect(down.ratios).toEqual({ 'tidelog-broker/kafka': 50 })
  })

  it('markdown groups rows by contenders and footnotes the reasons', () => {
    const report: Report = {
      date: '2026-01-01T00:00:00.000Z',
      machine: { cpus: 2, cpuModel: 'cpu', memory: '1 GiB', node: 'v20' },
      command: 'npm run bench',
      timing: { rounds: 3, windowMs: 1, warmupMs: 1, mode: 'quick', endToEndRounds: 1 },
      scenarios: [
        makeRow({ id: 'A', title: 'a', unit: 'u', higherIsBetter: true }, [['x', s(2)], ['y', s(1)]], undefined, ['a note']),
        makeRow({ id: 'B', title: 'b', unit: 'u', higherIsBetter: true }, [['x', s(2)], ['y', 'down']]),
        makeRow({ id: 'C', title: 'c', unit: 'u', higherIsBetter: true }, [['z', s(3)]]),
      ],
      goals: checkGoals([]),
    }
    const md = markdown(report)
    expect(md.match(/\| id \| scenario/g)?.length).toBe(2)
    expect(md).toContain('| B | b | u | 2.00 (2.00-2.00) | n/a [1] |  |')
    expect(md).toContain('- [1] down')
    expect(md).toContain('- a note')
    expect(md).toContain('| tidelog broker cold start <= 1/20 of Apache Kafka | not measured |  |')
  })

  it('markdown names a suite that threw, so a report never hides a missing suite', () => {
    const report: Report = {
      date: '2026-01-01T00:00:00.000Z',
      machine: { cpus: 2, cpuModel: 'cpu', memory: '1 GiB', node: 'v20' },
      command: 'npm run bench',
      timing: { rounds: 3, windowMs: 1, warmupMs: 1, mode: 'full', endToEndRounds: 3 },
      scenarios: [makeRow({ id: 'A', title: 'a', unit: 'u', higherIsBetter: true }, [['x', s(2)]])],
      goals: [],
      failedSuites: [{ suite: 'streams', error: 'Error: no JVM\n    at run (streams.ts:1:1)' }],
    }
    const md = markdown(report)
    expect(md).toContain('# Failed suites')
    expect(md).toContain('- streams: Error: no JVM\n')
    expect(md).not.toContain('at run (streams.ts')
    expect(markdown({ ...report, failedSuites: [] })).not.toContain('Failed suites')
  })

  it('checks the streams goals on the ST rows only (not S1, the broker start-up)', () => {
    const row = (id: string, t: number, j: number) => makeRow({ id, title: id, unit: 'records/s', higherIsBetter: true }, [['tidelog', s(t)], ['java', s(j)]])
    const goals = checkGoals([row('ST1@tidelog-broker', 150, 100), row('ST2@kafka', 120, 100), row('ST3@kafka', 80, 100), row('ST4@kafka', 300, 100), row('S1', 1, 100)])
    const of = (prefix: string) => goals.find((g) => g.goal.startsWith('@tidelog/streams') && g.goal.includes(prefix))!
    expect(of('(ST1)')).toEqual({ goal: of('(ST1)').goal, measured: ['ST1@tidelog-broker: 1.5x', 'ST2@kafka: 1.2x'], met: true })
    expect(of('(ST3)')).toEqual({ goal: of('(ST3)').goal, measured: ['ST3@kafka: 0.8x', 'ST4@kafka: 3x'], met: false })
  })

  it('C1.slow is a consume scenario; its goal is the slow run over the plain one, for tidelog', () => {
    const picked = select(['C1.slow'])
    expect(typeof picked === 'string' ? picked : picked.map((p) => [p.suite.name, [...(p.only ?? [])]])).toEqual([['consume', ['C1.SLOW']]])
    const row = (id: string, plain: number, slow: number) => makeRow({ id, title: id, unit: 'records/s', higherIsBetter: true }, [['tidelog', s(plain)], ['tidelog.slow', s(slow)]], [['tidelog.slow', 'tidelog']])
    const goal = (rows: ReturnType<typeof row>[]) => checkGoals(rows).find((g) => g.goal.includes('(C1.slow)'))!
    expect(goal([row('C1.slow@tidelog-broker', 100, 95), row('C1.slow@kafka', 100, 92)])).toMatchObject({ measured: ['C1.slow@tidelog-broker: 0.95x', 'C1.slow@kafka: 0.92x'], met: true })
    expect(goal([row('C1.slow@tidelog-broker', 100, 50)]).met).toBe(false)
    expect(goal([]).met).toBe('not measured')
  })
})

describe('interleave', () => {
  it('alternates the order each round, keeps a failed contender out afterwards', async () => {
    const calls: string[] = []
    let bCalls = 0
    const out = await interleave(
      [
        { name: 'a', run: async (r) => (calls.push(`a${r}`), { rate: 10 + r }), warmup: async () => calls.push('wa') },
        {
          name: 'b',
          run: async (r) => {
            calls.push(`b${r}`)
            if (++bCalls === 2) throw new Error('broke\nsecond line')
            return { rate: 1 }
          },
        },
      ],
      { rounds: 3 },
    )
    expect(calls).toEqual(['wa', 'a0', 'b0', 'b1', 'a1', 'a2'])
    expect(out.get('a')!.metrics.get('rate')).toMatchObject({ median: 11, min: 10, max: 12, runs: [10, 11, 12] })
    expect(out.get('b')!.error).toBe('broke')
    expect(out.get('b')!.metrics.get('rate')!.runs).toEqual([1])
  })
})

describe('client records', () => {
  it('10-byte keys, 100-byte values of capital letters, the index in the first four bytes', () => {
    const recs = makeRecords(300)
    expect(makeRecords(300)).toEqual(recs)
    const bad: string[] = []
    for (let i = 0; i < recs.length; i++) {
      const { key, value } = recs[i]!
      if (key.length !== 10 || value.length !== 100 || value.readUInt32BE(0) !== i) bad.push(`record ${i}`)
      for (let j = 4; j < 100; j++) if (value[j]! < 65 || value[j]! > 90) bad.push(`record ${i} byte ${j}`)
    }
    expect(bad).toEqual([])
    expect(new Set(recs.map((r) => r.key.toString())).size).toBeGreaterThan(290)
  })
})

describe('README section', () => {
  it('replaces only what lies between the markers', async () => {
    const { withReadmeSection } = await import('../src/report.js')
    const report: Report = {
      date: '2026-01-02T03:04:05.000Z',
      machine: { cpus: 2, cpuModel: 'cpu', memory: '1 GiB', node: 'v20' },
      command: 'npm run bench',
      timing: { rounds: 7, windowMs: 1, warmupMs: 1, mode: 'full', endToEndRounds: 3 },
      scenarios: [makeRow({ id: 'A', title: 'a', unit: 'u', higherIsBetter: true }, [['x', summarize([2, 1, 3])]], undefined, ['a note'])],
      goals: [],
    }
    const before = '# t\n\n## Benchmarks\n\n<!-- bench:start -->\nold\n<!-- bench:end -->\n\n## Architecture\n'
    const after = withReadmeSection(before, report)
    expect(after.startsWith('# t\n\n## Benchmarks\n\n<!-- bench:start -->\n`npm run bench`')).toBe(true)
    expect(after).toContain('Measured 2026-01-02 03:04 UTC on 2 x cpu')
    expect(after.endsWith('<!-- bench:end -->\n\n## Architecture\n')).toBe(true)
    expect(after).not.toContain('old')
    expect(after).toContain('| A | a | u | 2.00 |')
    expect(after).not.toContain('a note')
    expect(withReadmeSection(after, report)).toBe(after)
    expect(() => withReadmeSection('# no markers', report)).toThrow(/bench:start/)
  })
})
