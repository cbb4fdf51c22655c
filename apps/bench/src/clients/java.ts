// Apache Kafka's own Java tools, run from the jars the interop harness fetches:
// ProducerPerformance, ConsumerPerformance, EndToEndLatency and TransactionalMessageCopier.
import { javaTool } from '../../../../test/helpers/kafka.js'
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

/**
 * EndToEndLatency: one record at a time, produce then poll until it is back. The tool
 * reports percentiles in whole milliseconds, its average with decimals.
 */
export async function endToEndLatency(bootstrap: string, topic: string, records: number, acks: 1 | -1): Promise<LatencyResult & { avg: number }> {
  const { stdout, stderr } = await javaTool(
    `${TOOLS}EndToEndLatency`,
    ['--bootstrap-server', bootstrap, '--topic', topic, '--num-records', String(records), '--producer-acks', acks === -1 ? 'all' : String(acks), '--record-size', String(VALUE_BYTES)],
    { timeoutMs: 300_000 },
  )
  const text = stdout + stderr
  const avg = Number(match(text, /Avg latency: ([\d.]+) ms/, 'EndToEndLatency')[1])
  const p = match(text, /50th = ([\d.]+), 99th = ([\d.]+), 99\.9th = ([\d.]+)/, 'EndToEndLatency')
  return { samples: records, lost: 0, p50: Number(p[1]), p99: Number(p[2]), p999: Number(p[3]), max: NaN, avg }
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
