// Apache Kafka's own Java tools, run from the jars the interop harness fetches:
// ProducerPerformance, ConsumerPerformance and EndToEndLatency.
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
    `max.in.flight.requests.per.connection=${s.maxInFlight}`,
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
export async function producerPerformance(bootstrap: string, topic: string, records: number, warmup: number, s: ProducerSettings): Promise<number> {
  const { stdout, stderr } = await javaTool(
    `${TOOLS}ProducerPerformance`,
    [
      '--bootstrap-server', bootstrap,
      '--topic', topic,
      '--num-records', String(records + warmup),
      '--warmup-records', String(warmup),
      '--record-size', String(VALUE_BYTES),
      '--throughput', '-1',
      '--key-distribution', 'random',
      '--record-key-range', String(2 ** 31 - 1),
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
