// The goals, checked against the rows of one run. A goal whose rows are
// missing (scenario not run, contender unavailable) says so instead of passing.
import type { ScenarioResult } from './types.js'

export interface GoalCheck {
  goal: string
  /** Every measured ratio the goal covers, "row: ratio". */
  measured: string[]
  met: boolean | 'not measured'
}

function ratiosOf(rows: ScenarioResult[], idPattern: RegExp, pair: string): Array<[string, number]> {
  const out: Array<[string, number]> = []
  for (const r of rows) {
    if (!idPattern.test(r.id)) continue
    const v = r.ratios[pair]
    if (v !== undefined) out.push([r.id, v])
  }
  return out
}

function check(goal: string, found: Array<[string, number]>, threshold: number): GoalCheck {
  return {
    goal,
    measured: found.map(([id, v]) => `${id}: ${v}x`),
    met: found.length === 0 ? 'not measured' : found.every(([, v]) => v >= threshold),
  }
}

export function checkGoals(rows: ScenarioResult[]): GoalCheck[] {
  // Like for like and .best rows alike; the consumer against kafkajs in its faster mode (C1.best).
  const clientRows = /^(P\d(\.\w+)*|C1)@/
  const againstKafkajs = /^(P\d(\.\w+)*|C1\.best)@/
  const goals: GoalCheck[] = [
    check('tidelog producer and consumer >= 5x kafkajs (the consumer against its faster mode, eachMessage or eachBatch)', ratiosOf(rows, againstKafkajs, 'tidelog/kafkajs'), 5),
    check('tidelog run() + eachBatch (partitionsConsumedConcurrently 6) >= 5x kafkajs run the same way', ratiosOf(rows, /^C1\.batch@/, 'tidelog/kafkajs'), 5),
    check('@tidelog/kafkajs >= 4x kafkajs on P1 and C1', ratiosOf(rows, /^(P1|C1(\.batch)?)@/, 'tidelog-kafkajs/kafkajs'), 4),
    // Issue 13: a slow partition (100 ms a message) leaves the other five their throughput.
    check('a partition whose handler takes 100 ms a message leaves the other five >= 0.9x of their rate without it (C1.slow)', ratiosOf(rows, /^C1\.slow@/, 'tidelog.slow/tidelog'), 0.9),
    check('tidelog producer and consumer >= 2x @platformatic/kafka 2.x (both on Node 22)', ratiosOf(rows, clientRows, 'tidelog-node22/platformatic-2'), 2),
    check('tidelog producer and consumer >= 2x @platformatic/kafka 1.x (Node 20)', ratiosOf(rows, clientRows, 'tidelog/platformatic'), 2),
    check('tidelog producer and consumer >= 1x the Java client', ratiosOf(rows, clientRows, 'tidelog/java'), 1),
    check('tidelog broker >= 1x Apache Kafka throughput with the Java client', ratiosOf(rows, /^(P\d(\.\w+)?|C1)\.brokers\(java\)$/, 'tidelog-broker/kafka'), 1),
    check('tidelog broker p99 latency no worse than Apache Kafka', [
      ...ratiosOf(rows, /^L1\.p99\.brokers\(tidelog\)$/, 'tidelog-broker/kafka'),
      ...ratiosOf(rows, /^L2\.p99\.brokers\(java\)$/, 'tidelog-broker/kafka'),
    ], 1),
    check('tidelog broker cold start <= 1/20 of Apache Kafka', ratiosOf(rows, /^S1$/, 'tidelog-broker/kafka'), 20),
    check('tidelog broker RSS <= 1/5 of Apache Kafka', ratiosOf(rows, /^M1\./, 'tidelog-broker/kafka'), 5),
    // Issue 11: transactions cost little over idempotence, and beat Java's client.
    check('tidelog transactional produce (T1) >= 0.8x its idempotent produce', ratiosOf(rows, /^T1@/, 'tidelog/tidelog-idempotent'), 0.8),
    check('tidelog transactional produce (T1) >= 2x the Java transactional producer', ratiosOf(rows, /^T1@/, 'tidelog/java'), 2),
    check("tidelog exactly-once copier (T2) >= 2x Kafka's TransactionalMessageCopier", ratiosOf(rows, /^T2@/, 'tidelog/java'), 2),
    check("tidelog exactly-once copier at its defaults (T2.defaults) >= 2x TransactionalMessageCopier", ratiosOf(rows, /^T2\.defaults@/, 'tidelog-defaults/java'), 2),
    // Issues 14 and 15: the same topology as Kafka Streams (Java), on the same broker.
    check('@tidelog/streams >= 1x Kafka Streams (Java): filter + map (ST1), count per key (ST2)', ratiosOf(rows, /^ST[12]@/, 'tidelog/java'), 1),
    check('@tidelog/streams >= 1x Kafka Streams (Java): windowed count (ST3), stream-table join (ST4)', ratiosOf(rows, /^ST[34]@/, 'tidelog/java'), 1),
  ]
  const ingest = rows.find((r) => r.id === 'X1.ingest')
  const frac = ingest === undefined ? undefined : Object.values(ingest.ratios)[0]
  goals.push({
    goal: 'tidelog broker ingest >= 50% of the smaller physical limit',
    measured: frac === undefined ? [] : [`X1.ingest: ${(frac * 100).toFixed(1)}%`],
    met: frac === undefined ? 'not measured' : frac >= 0.5,
  })
  goals.push(...cleanerGoals(rows))
  return goals
}

/** Issue 12: the cleaner's goals are absolute (no peer has the same figure), read off the CL1 medians. */
function cleanerGoals(rows: ScenarioResult[]): GoalCheck[] {
  const median = (id: string, contender: string) => rows.find((r) => r.id === id)?.results[contender]?.median
  const rate = median('CL1.rate', 'tidelog-broker')
  const delay = median('CL1.delay', 'cleaning')
  const ratio = rows.find((r) => r.id === 'CL1.produce')?.ratios['cleaning/alone']
  const goal = (text: string, value: number | undefined, shown: (v: number) => string, met: (v: number) => boolean): GoalCheck => ({
    goal: text,
    measured: value === undefined ? [] : [shown(value)],
    met: value === undefined ? 'not measured' : met(value),
  })
  return [
    goal('log cleaner >= 100 MB/s beside appends (CL1.rate)', rate, (v) => `CL1.rate: ${v.toFixed(0)} MB/s`, (v) => v >= 100),
    goal('event-loop delay p99 < 10 ms while the cleaner runs (CL1.delay)', delay, (v) => `CL1.delay: ${v.toFixed(1)} ms`, (v) => v < 10),
    goal('appends while the cleaner runs >= 0.8x of alone (CL1.produce)', ratio, (v) => `CL1.produce: ${v}x`, (v) => v >= 0.8),
  ]
}
