/**
 * The checked-in expectations (expectations.txt) and the results of the same
 * harness against Apache Kafka (kafka-results.txt), and the comparison CI runs.
 *
 * expectations.txt: one test a line, `<test> <verdict>`, `#` comments (`<test>@<job>` is a run of
 * the SASL pass, sasl.ts):
 *   pass                        must pass
 *   known-fail: #N <why>        must not pass (fails or skips); #N is the open issue that fixes it
 *   not-applicable: <why>       must not pass; allowed only where Apache Kafka with the same
 *                               settings also does not pass, or where librdkafka itself skips the
 *                               test for the Kafka release the broker presents as
 *   flaky: <why>                either outcome accepted (timing-flaky on both brokers, with evidence)
 * A test that now passes against a known-fail / not-applicable entry fails CI, so the
 * file is updated and the list only gets better.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import type { TestResult, TestState } from './suite.js'

export type Verdict =
  | { kind: 'pass' }
  | { kind: 'known-fail'; issue: string; why: string }
  | { kind: 'not-applicable'; why: string }
  | { kind: 'flaky'; why: string }

export class ExpectationsFileError extends Error {
  constructor(file: string, line: number, message: string) {
    super(`${file}:${line}: ${message}`)
    this.name = 'ExpectationsFileError'
  }
}

export function parseExpectations(file: string): Map<string, Verdict> {
  const out = new Map<string, Verdict>()
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((raw, i) => {
      const line = raw.trim()
      if (!line || line.startsWith('#')) return
      const m = /^(\d{4}\w*(?:@[\w:.-]+)?)\s+(pass|known-fail|not-applicable|flaky)(?::\s*(.*))?$/.exec(line)
      if (!m) throw new ExpectationsFileError(file, i + 1, `cannot parse "${line}"`)
      const [, name, kind, rest = ''] = m
      if (out.has(name!)) throw new ExpectationsFileError(file, i + 1, `${name} is listed twice`)
      if (kind === 'pass') {
        if (rest) throw new ExpectationsFileError(file, i + 1, 'pass takes no reason')
        out.set(name!, { kind: 'pass' })
      } else if (kind === 'known-fail') {
        const issue = /^(#\d+)\b\s*(.*)$/.exec(rest)
        if (!issue) throw new ExpectationsFileError(file, i + 1, 'known-fail needs the open issue first: "known-fail: #12 why"')
        out.set(name!, { kind: 'known-fail', issue: issue[1]!, why: issue[2]! })
      } else {
        if (!rest) throw new ExpectationsFileError(file, i + 1, `${kind} needs a reason`)
        out.set(name!, { kind: kind as 'not-applicable' | 'flaky', why: rest })
      }
    })
  return out
}

/** kafka-results.txt: `<test> <STATE> <reason>` lines written by `run.ts --target kafka --write`. */
export function parseKafkaResults(file: string): Map<string, { state: TestState; reason: string }> {
  const out = new Map<string, { state: TestState; reason: string }>()
  for (const raw of readFileSync(file, 'utf8').split('\n')) {
    const line = raw.trim()
    if (!line || line.startsWith('#')) continue
    const m = /^(\d{4}\w*(?:@[\w:.-]+)?)\s+(PASSED|FAILED|SKIPPED|RUNNING|DNS)\s*(.*)$/.exec(line)
    if (m) out.set(m[1]!, { state: m[2] as TestState, reason: m[3]! })
  }
  return out
}

export function writeResults(file: string, header: string[], results: TestResult[]): void {
  const lines = [...header.map((h) => `# ${h}`), ...results.map((r) => `${r.name} ${r.state} ${r.reason.replace(/\s+/g, ' ').slice(0, 300)}`.trimEnd())]
  writeFileSync(file, lines.join('\n') + '\n')
}

export interface Comparison {
  problems: string[]
  notes: string[]
  counts: Record<TestState, number>
}

const VERSION_SKIP = /not applicable for broker version/

export function compare(
  results: TestResult[],
  expected: Map<string, Verdict>,
  kafka: Map<string, { state: TestState; reason: string }>,
): Comparison {
  const problems: string[] = []
  const notes: string[] = []
  const counts: Record<TestState, number> = { PASSED: 0, FAILED: 0, SKIPPED: 0, RUNNING: 0, DNS: 0 }
  const seen = new Set<string>()
  for (const r of results) {
    counts[r.state]++
    seen.add(r.name)
    const v = expected.get(r.name)
    const passed = r.state === 'PASSED'
    const what = `${r.name}: ${r.state}${r.reason ? ` (${r.reason})` : ''}`
    if (!v) {
      problems.push(`${what}: not in expectations.txt (add it)`)
      continue
    }
    switch (v.kind) {
      case 'pass':
        if (!passed) problems.push(`${what}: expected to pass`)
        break
      case 'known-fail':
        if (passed) problems.push(`${r.name} now passes: it is listed as known-fail ${v.issue}; change it to pass`)
        break
      case 'not-applicable': {
        if (passed) problems.push(`${r.name} now passes: it is listed as not-applicable; change it to pass`)
        const k = kafka.get(r.name)
        const kafkaPasses = k?.state === 'PASSED'
        if (kafkaPasses && !VERSION_SKIP.test(r.reason)) {
          problems.push(`${r.name} is not-applicable but passes on Apache Kafka (kafka-results.txt): use known-fail with an issue`)
        }
        break
      }
      case 'flaky':
        if (!passed) notes.push(`${what}: flaky (${v.why}), not counted`)
        break
    }
  }
  for (const name of expected.keys()) {
    if (!seen.has(name)) problems.push(`${name}: in expectations.txt but test-runner did not report it (renamed or removed? drop the line)`)
  }
  return { problems, notes, counts }
}

/** Main-pass tests expected to pass that failed: the ones run.ts reruns alone once. */
export function rerunCandidates(results: TestResult[], expected: Map<string, Verdict>): TestResult[] {
  return results.filter((r) => r.state === 'FAILED' && expected.get(r.name)?.kind === 'pass')
}

/**
 * The full run's results with each rerun test's outcome in place of its failure, and a
 * note per rerun naming both outcomes. A rerun the test-runner did not report keeps the
 * failure.
 */
export function mergeReruns(results: TestResult[], failed: TestResult[], rerun: TestResult[]): { merged: TestResult[]; notes: string[] } {
  const again = new Map(rerun.map((r) => [r.name, r]))
  const merged = results.map((r) => (failed.some((f) => f.name === r.name) ? (again.get(r.name) ?? r) : r))
  const notes = failed.map((f) => {
    const a = again.get(f.name)
    return `${f.name}: FAILED in the full run (${f.reason}); rerun alone on a fresh broker: ${a ? `${a.state}${a.reason ? ` (${a.reason})` : ''}` : 'not reported'}`
  })
  return { merged, notes }
}

/** One test's lines of run-test.sh's interleaved log (`[<name>   / 1.2s] ...`), colour codes removed. */
export function testLogLines(log: string, name: string): string[] {
  return log
    .replace(/\x1b\[[0-9;]*m/g, '')
    .split('\n')
    .filter((l) => l.startsWith(`[${name} `) || l.startsWith(`[${name}/`))
}
