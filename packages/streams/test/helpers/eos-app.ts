/**
 * The exactly-once verifier's application and reader (after Kafka's streams_eos_test): input
 * `<prefix>-data` (String key, Long value), a stateless copy to `<prefix>-echo`, a count per key
 * (through a repartition topic) to `<prefix>-counts` and a sum per key to `<prefix>-sums`.
 */
import { Consumer } from '@tidelog/consumer'
import { Consumed, Grouped, Materialized, Produced, Serdes, StreamsBuilder, type StreamsConfig } from '@tidelog/streams'

const S = Serdes.String()
const L = Serdes.Long()

export const topicsOf = (prefix: string) => ({ data: `${prefix}-data`, echo: `${prefix}-echo`, counts: `${prefix}-counts`, sums: `${prefix}-sums` })

export function verifierTopology(prefix: string): StreamsBuilder {
  const t = topicsOf(prefix)
  const b = new StreamsBuilder()
  const data = b.stream(t.data, Consumed.with(S, L))
  data.mapValues((v) => v).to(t.echo, Produced.with(S, L))
  data.groupBy((k) => k, Grouped.with(S, L)).count(Materialized.as('counts')).toStream().to(t.counts, Produced.with(S, L))
  data.groupByKey(Grouped.with(S, L)).reduce((a, v) => a + v, Materialized.as('sums')).toStream().to(t.sums, Produced.with(S, L))
  return b
}

export function verifierConfig(brokers: string[], applicationId: string, extra: StreamsConfig = {}): StreamsConfig {
  return {
    'application.id': applicationId,
    'bootstrap.servers': brokers,
    'processing.guarantee': 'exactly_once_v2',
    'transaction.timeout.ms': 3000,
    'session.timeout.ms': 6000,
    'heartbeat.interval.ms': 500,
    ...extra,
  }
}

export interface Observed {
  echo: Map<string, number>
  counts: Map<string, number>
  sums: Map<string, number>
  echoed: number
}

/**
 * Reads the three outputs read_committed until `done(observed)` holds or the deadline passes;
 * echo counts how often each (key, value) was seen, counts and sums keep the latest per key.
 */
export async function readOutputs(brokers: string[], prefix: string, partitions: number, done: (o: Observed) => boolean, deadlineMs = 60_000): Promise<Observed> {
  const t = topicsOf(prefix)
  const o: Observed = { echo: new Map(), counts: new Map(), sums: new Map(), echoed: 0 }
  const c = new Consumer({ brokers, autoOffsetReset: 'earliest', isolationLevel: 'read_committed' })
  const ac = new AbortController()
  const timer = setTimeout(() => ac.abort(), deadlineMs)
  try {
    const tps = []
    for (const topic of [t.echo, t.counts, t.sums]) for (let p = 0; p < partitions; p++) tps.push({ topic, partition: p })
    c.assign(tps)
    if (done(o)) return o
    for await (const batch of c.batches({ signal: ac.signal })) {
      for (const m of batch.messages) {
        const key = m.key!.toString()
        const value = Number(m.value!.readBigInt64BE())
        if (m.topic === t.echo) {
          const id = `${key}:${value}`
          o.echo.set(id, (o.echo.get(id) ?? 0) + 1)
          o.echoed++
        } else if (m.topic === t.counts) o.counts.set(key, value)
        else o.sums.set(key, value)
      }
      if (done(o)) break
    }
  } catch (e) {
    if (!ac.signal.aborted) throw e
  } finally {
    clearTimeout(timer)
    await c.close()
  }
  return o
}

/** What the outputs must hold after `sent`: every input echoed once, counts and sums per key exact. */
export function expected(sent: readonly { key: string; value: number }[]): { counts: Map<string, number>; sums: Map<string, number> } {
  const counts = new Map<string, number>()
  const sums = new Map<string, number>()
  for (const r of sent) {
    counts.set(r.key, (counts.get(r.key) ?? 0) + 1)
    sums.set(r.key, (sums.get(r.key) ?? 0) + r.value)
  }
  return { counts, sums }
}

export function complete(o: Observed, sent: readonly { key: string; value: number }[]): boolean {
  const want = expected(sent)
  if (o.echoed < sent.length) return false
  for (const [k, n] of want.counts) if (o.counts.get(k) !== n || o.sums.get(k) !== want.sums.get(k)) return false
  return true
}
