/**
 * The librdkafka harness's parsing and comparison rules (no broker, no build), and
 * that the checked-in expectations.txt is well formed and consistent with the
 * checked-in Apache Kafka results.
 */
import { fileURLToPath } from 'node:url'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { compare, mergeReruns, parseExpectations, parseKafkaResults, rerunCandidates, testLogLines, ExpectationsFileError } from './expectations.js'
import { countSubtestPasses, isSaslResult, SASL_JOBS } from './sasl.js'
import { parseSummary, type TestResult } from './suite.js'

const here = fileURLToPath(new URL('.', import.meta.url))

function file(text: string): string {
  const f = join(mkdtempSync(join(tmpdir(), 'rdk-exp-')), 'expectations.txt')
  writeFileSync(f, text)
  return f
}

const r = (name: string, state: TestResult['state'], reason = ''): TestResult => ({ name, state, seconds: 1, reason })

describe('parseSummary', () => {
  it('reads test-runner summary rows through their colour codes, keeping the last table', () => {
    const out = [
      '|\x1b[33m 0001_multiobj                            |    RUNNING |   0.100s \x1b[0m|',
      'TEST 20261201 (bare, scenario default) SUMMARY',
      '|\x1b[32m 0001_multiobj                            |     PASSED |   1.234s \x1b[0m|',
      '|\x1b[31m 0011_produce_batch                       |     FAILED |  12.000s \x1b[0m|\x1b[31m test_x():12: expected Success\x1b[0m',
      '|\x1b[36m 0016_client_swname                       |    SKIPPED |   0.001s \x1b[0m|\x1b[36m Env var BROKER_JMX_PORT_2 missing\x1b[0m',
    ].join('\n')
    const m = parseSummary(out)
    expect([...m.values()].map((x) => [x.name, x.state, x.reason])).toEqual([
      ['0001_multiobj', 'PASSED', ''],
      ['0011_produce_batch', 'FAILED', 'test_x():12: expected Success'],
      ['0016_client_swname', 'SKIPPED', 'Env var BROKER_JMX_PORT_2 missing'],
    ])
  })
})

describe('compare', () => {
  const exp = parseExpectations(
    file(
      [
        '# comment',
        '0001_a pass',
        '0002_b known-fail: #11 transactions',
        '0003_c not-applicable: needs a JMX port',
        '0004_d flaky: timing, fails on both brokers now and then',
        '0005_e not-applicable: librdkafka skips it below 4.0',
      ].join('\n'),
    ),
  )
  const kafka = new Map([
    ['0003_c', { state: 'SKIPPED' as const, reason: 'no JMX' }],
    ['0005_e', { state: 'PASSED' as const, reason: '' }],
  ])

  it('accepts the expected outcomes, flaky either way', () => {
    const c = compare(
      [r('0001_a', 'PASSED'), r('0002_b', 'FAILED'), r('0003_c', 'SKIPPED'), r('0004_d', 'FAILED'), r('0005_e', 'SKIPPED', 'not applicable for broker version 3.9.0.0')],
      exp,
      kafka,
    )
    expect(c.problems).toEqual([])
    expect(c.notes).toHaveLength(1)
  })

  it('fails on a lost pass, a new pass, an unlisted test and a vanished test', () => {
    const c = compare([r('0001_a', 'FAILED', 'boom'), r('0002_b', 'PASSED'), r('0003_c', 'PASSED'), r('0004_d', 'PASSED'), r('0009_new', 'PASSED')], exp, kafka)
    expect(c.problems.join('\n')).toMatch(/0001_a: FAILED \(boom\): expected to pass/)
    expect(c.problems.join('\n')).toMatch(/0002_b now passes/)
    expect(c.problems.join('\n')).toMatch(/0003_c now passes/)
    expect(c.problems.join('\n')).toMatch(/0009_new: .*not in expectations/)
    expect(c.problems.join('\n')).toMatch(/0005_e: in expectations.txt but test-runner did not report it/)
  })

  it('refuses not-applicable for a test Apache Kafka passes (unless librdkafka skips it for our version)', () => {
    const c = compare([r('0005_e', 'FAILED', 'x')], exp, kafka)
    expect(c.problems.join('\n')).toMatch(/0005_e is not-applicable but passes on Apache Kafka/)
  })

  it('rejects a known-fail without an issue', () => {
    expect(() => parseExpectations(file('0002_b known-fail: transactions\n'))).toThrow(ExpectationsFileError)
  })
})

describe('the checked-in files', () => {
  const exp = parseExpectations(join(here, 'expectations.txt'))
  const kafka = parseKafkaResults(join(here, 'kafka-results.txt'))

  it('list every test Apache Kafka ran, and the reverse (the SASL pass is tidelog-only)', () => {
    expect([...exp.keys()].filter((n) => !isSaslResult(n)).sort()).toEqual([...kafka.keys()].sort())
  })

  it('list every job of the SASL pass, and the reverse', () => {
    expect([...exp.keys()].filter(isSaslResult).sort()).toEqual(SASL_JOBS.map((j) => `${j.test}@${j.label}`).sort())
  })

  it('use not-applicable only where Apache Kafka does not pass either', () => {
    for (const [name, v] of exp) {
      if (v.kind !== 'not-applicable' || /librdkafka skips it for broker version/.test(v.why)) continue
      expect(kafka.get(name)?.state, `${name}: ${v.why}`).not.toBe('PASSED')
    }
  })
})

describe('the SASL pass', () => {
  it('counts the subtests test-runner reports as passed, not the test itself or failed subtests', () => {
    const log = [
      '\x1b[0m\x1b[36m[0135_sasl_credentials       /  0.065s] \x1b[32m[ do_test:82: set_after_auth_failure=no: PASS (0.06s) ]',
      '[0142_reauthentication       /  1.0s] [ do_test_txn_producer:329: test reauth in the middle of a txn, txn is committed: PASS (15.06s) ]',
      '[0142_reauthentication       /  2.0s] [ do_test_producer:79: test producer message loss while reauthenticating: FAIL ]',
      '[0142_reauthentication       /  3.0s] ================= Test 0142_reauthentication PASSED =================',
      // 0097 has no SUB_TEST: it prints its own start and PASSED lines per case.
      '\x1b[0m\x1b[36m[0097_ssl_verify             /  0.020s] \x1b[34m[ 714: SSL cert verify: verify_ok=1, untrusted_client_key=0, load_key=location ]',
      '\x1b[0m\x1b[36m[0097_ssl_verify             /  1.029s] \x1b[32m[ PASSED: 714: SSL cert verify: verify_ok=1, untrusted_client_key=0, load_key=location ]',
    ].join('\n')
    expect(countSubtestPasses(log)).toBe(3)
  })

  it('reads <test>@<job> names in expectations', () => {
    const e = parseExpectations(file('0142_reauthentication@plain:do_test_producer pass\n'))
    expect([...e.keys()]).toEqual(['0142_reauthentication@plain:do_test_producer'])
  })
})

describe('reruns of tests expected to pass', () => {
  const exp = parseExpectations(file(['0001_a pass', '0002_b known-fail: #11 x', '0003_c pass', '0004_d flaky: timing'].join('\n')))
  const full = [r('0001_a', 'FAILED', 'poll timeout'), r('0002_b', 'FAILED', 'rf 3'), r('0003_c', 'PASSED'), r('0004_d', 'FAILED', 'late')]

  it('reruns only the failed tests expected to pass', () => {
    expect(rerunCandidates(full, exp).map((x) => x.name)).toEqual(['0001_a'])
  })

  it('accepts a rerun that passes, naming both outcomes, and keeps a second failure a failure', () => {
    const failed = rerunCandidates(full, exp)
    const ok = mergeReruns(full, failed, [r('0001_a', 'PASSED')])
    expect(compare(ok.merged, exp, new Map()).problems).toEqual([])
    expect(ok.notes).toEqual(['0001_a: FAILED in the full run (poll timeout); rerun alone on a fresh broker: PASSED'])
    const bad = mergeReruns(full, failed, [r('0001_a', 'FAILED', 'again')])
    expect(compare(bad.merged, exp, new Map()).problems).toEqual(['0001_a: FAILED (again): expected to pass'])
    const missing = mergeReruns(full, failed, [])
    expect(compare(missing.merged, exp, new Map()).problems).toEqual(['0001_a: FAILED (poll timeout): expected to pass'])
    expect(missing.notes[0]).toMatch(/not reported$/)
  })

  it("picks one test's lines out of the interleaved log", () => {
    const log = [
      '\x1b[36m[0052_msg_timestamps         /  2.249s] consume.easy: consume 20 messages\x1b[0m',
      '[0051_assign_adds            /  2.300s] other test',
      '[0052_msg_timestamps         / 12.249s] consume.easy: consumer_poll() timeout',
      '[0052_msg_timestamps_x       / 1.0s] a different test',
    ].join('\n')
    expect(testLogLines(log, '0052_msg_timestamps')).toEqual([
      '[0052_msg_timestamps         /  2.249s] consume.easy: consume 20 messages',
      '[0052_msg_timestamps         / 12.249s] consume.easy: consumer_poll() timeout',
    ])
  })
})
