// Apache Kafka's own Java tools, run from the jars the interop harness fetches
// (ProducerPerformance, ConsumerPerformance), and RoundTrip.java, L2's harness on the Java client.
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { cacheRoot, fetchKafka, javaTool } from '../../../../test/helpers/kafka.js'
import type { LatencyResult, ProducerSettings } from './jobs.js'
import { VALUE_BYTES } from './jobs.js'

const TOOLS = 'org.apache.kafka.tools.'

function producerProperties(s: ProducerSettings): string[] {
  return [
    `acks=${s.acks === -1 ? 'all' : s.acks}`,
    `enable.idempotence=${s.idempotent}`,
    `compression.type=${s.compression}`,
    `linger.ms=${s.lingerMs}`,
    `batch.size=${s.batchBytes}`,
    ...(s.maxInFlight === 0 ? [] : [`max.in.flight.requests.per.connection=${s.maxInFlight}`]),
  ]
}

function match(text: string, re: RegExp, what: string): RegExpMatchArray {
  const m = re.exec(text)
  if (m === null) throw new Error(`${what}: unexpected output: ${text.trim().split('\n').slice(-2).join(' | ').slice(0, 300)}`)
  return m
}

/**
 * ProducerPerformance's steady-state rate (records/s) after `warmup` uncounted records. Keys:
 * the tool's 'random' distribution up to its limit, Integer.MAX_VALUE, written as decimal
 * strings: 9.5 bytes on average against the Node clients' 10.
 */
export async function producerPerformance(
  bootstrap: string,
  topic: string,
  records: number,
  warmup: number,
  s: ProducerSettings,
  transaction?: { transactionalId: string; durationMs: number },
  recordSize: number = VALUE_BYTES,
): Promise<number> {
  const { stdout, stderr } = await javaTool(
    `${TOOLS}ProducerPerformance`,
    [
      '--bootstrap-server', bootstrap,
      '--topic', topic,
      '--num-records', String(records + warmup),
      '--warmup-records', String(warmup),
      '--record-size', String(recordSize),
      '--throughput', '-1',
      '--key-distribution', 'random',
      '--record-key-range', String(2 ** 31 - 1),
      // The tool's transactions: commit once durationMs has passed since the begin.
      ...(transaction === undefined ? [] : ['--transactional-id', transaction.transactionalId, '--transaction-duration-ms', String(transaction.durationMs)]),
      '--command-property', ...producerProperties(s),
    ],
    { timeoutMs: 300_000 },
  )
  const m = match(stdout + stderr, /steady state records sent, ([\d.]+) records\/sec/, 'ProducerPerformance')
  return Number(m[1])
}

/** ConsumerPerformance's fetch rate (records/s), which leaves out the group join. */
export async function consumerPerformance(bootstrap: string, topic: string, records: number, group: string): Promise<{ fetchRate: number; totalRate: number }> {
  const { stdout, stderr } = await javaTool(
    `${TOOLS}ConsumerPerformance`,
    ['--bootstrap-server', bootstrap, '--topic', topic, '--num-records', String(records), '--group', group, '--hide-header',
      '--command-property', 'auto.offset.reset=earliest', 'fetch.min.bytes=1', 'fetch.max.wait.ms=500',
      'fetch.max.bytes=52428800', 'max.partition.fetch.bytes=1048576'],
    { timeoutMs: 300_000 },
  )
  // start, end, MB, MB/s, records, records/s, rebalance ms, fetch ms, fetch MB/s, fetch records/s
  const line = (stdout + stderr).split('\n').find((l) => /^\d{4}-\d\d-\d\d .*,/.test(l))
  const cols = line?.split(',').map((c) => c.trim())
  if (cols === undefined || cols.length < 10) throw new Error(`ConsumerPerformance: unexpected output: ${(stdout + stderr).slice(-300)}`)
  if (Number(cols[4]) < records) throw new Error(`ConsumerPerformance read ${cols[4]} of ${records} records`)
  return { fetchRate: Number(cols[9]), totalRate: Number(cols[5]) }
}

/** The copier's "time" fields: yyyy/MM/dd HH:mm:ss:SSS, local time (only differences are used). */
function copierTime(t: string): number {
  const m = /^(\d{4})\/(\d\d)\/(\d\d) (\d\d):(\d\d):(\d\d):(\d{3})$/.exec(t)
  if (m === null) throw new Error(`TransactionalMessageCopier: unexpected time ${t}`)
  return new Date(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!, +m[7]!).getTime()
}

/**
 * Kafka's TransactionalMessageCopier on partition 0 of `input` (manual assignment, offsets sent
 * by group id), a transaction per poll of at most `txnSize` records. Timed from its first
 * status line (after initTransactions, before the first poll) to its shutdown line (after the
 * last commit and closing the clients).
 */
export async function transactionalMessageCopier(
  bootstrap: string,
  o: { input: string; output: string; records: number; txnSize: number; groupId: string; transactionalId: string },
): Promise<{ records: number; ms: number }> {
  const { stdout, stderr } = await javaTool(
    `${TOOLS}TransactionalMessageCopier`,
    ['--broker-list', bootstrap, '--input-topic', o.input, '--input-partition', '0', '--output-topic', o.output, '--consumer-group', o.groupId,
      '--transactional-id', o.transactionalId, '--transaction-size', String(o.txnSize), '--max-messages', String(o.records)],
    { timeoutMs: 300_000 },
  )
  const lines = stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { stage?: string; shutdown_complete?: string; totalProcessed?: number; time?: string })
  const first = lines.find((l) => l.stage === 'ProcessLoop')
  // 4.x names the last line's stage; 3.x has a shutdown_complete field instead.
  const last = lines.find((l) => l.stage === 'ShutdownComplete' || l.shutdown_complete !== undefined)
  if (first?.time === undefined || last?.time === undefined) throw new Error(`TransactionalMessageCopier: unexpected output: ${(stdout + stderr).trim().split('\n').slice(-2).join(' | ').slice(0, 300)}`)
  if (last.totalProcessed !== o.records) throw new Error(`TransactionalMessageCopier copied ${last.totalProcessed} of ${o.records} records`)
  return { records: last.totalProcessed, ms: copierTime(last.time) - copierTime(first.time) }
}

const ROUND_TRIP_SOURCE = fileURLToPath(new URL('../../java/RoundTrip.java', import.meta.url))
const javaBin = (tool: 'java' | 'javac') => (process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', tool) : tool)
let roundTripBuild: Promise<{ libs: string; out: string }> | undefined

/**
 * RoundTrip.java compiled against the Kafka client jars, cached by the source's hash in the bench
 * cache (javac costs seconds, which --quick should not pay on every run).
 */
function buildRoundTrip(): Promise<{ libs: string; out: string }> {
  roundTripBuild ??= (async () => {
    const libs = await fetchKafka()
    const hash = createHash('sha256').update(readFileSync(ROUND_TRIP_SOURCE)).update(libs).digest('hex').slice(0, 16)
    const out = join(cacheRoot(), 'bench', `roundtrip-${hash}`)
    if (!existsSync(join(out, 'RoundTrip.class'))) {
      // Compiled beside its place and renamed into it, so a half-written class is never used.
      mkdirSync(dirname(out), { recursive: true })
      const tmp = mkdtempSync(`${out}.tmp-`)
      await promisify(execFile)(javaBin('javac'), ['-nowarn', '-cp', `${libs}/*`, '-d', tmp, ROUND_TRIP_SOURCE], { timeout: 180_000 })
      rmSync(out, { recursive: true, force: true })
      renameSync(tmp, out)
    }
    return { libs, out }
  })()
  return roundTripBuild
}

/**
 * One record at a time with the Java client (apps/bench/java/RoundTrip.java): microseconds,
 * after `warmup` uncounted round trips, as the Node clients are measured. Returns milliseconds.
 */
export async function javaRoundTrip(bootstrap: string, topic: string, records: number, warmup: number, acks: 1 | -1): Promise<LatencyResult> {
  const { libs, out } = await buildRoundTrip()
  const { stdout, stderr } = await promisify(execFile)(
    javaBin('java'),
    ['-Xms128m', '-Xmx512m', '-cp', `${out}:${libs}/*`, 'RoundTrip', bootstrap, topic, String(records), String(warmup), acks === -1 ? 'all' : String(acks)],
    { timeout: 300_000, maxBuffer: 64 * 1024 * 1024 },
  )
  const m = match(stdout + stderr, /^RESULT (\d+) (\d+) (\d+) (\d+)$/m, 'RoundTrip')
  const ms = (i: number) => Number(m[i]) / 1000
  return { samples: records, lost: 0, p50: ms(1), p99: ms(2), p999: ms(3), max: ms(4) }
}
