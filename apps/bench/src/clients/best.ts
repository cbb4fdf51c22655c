// Each producer's best documented settings for throughput (the ".best" rows), next to the
// like-for-like rows where every client gets the same acks, linger, batch size, in-flight limit
// and compression. acks, idempotence and compression stay the scenario's: they change what is
// measured, not how well a client is tuned.
import type { Contender } from '../scenarios/clients.js'
import type { ProducerSettings } from './jobs.js'

/** maxInFlight 0: the client's own default (unbounded for kafkajs, 1,000,000 for librdkafka). */
export const CLIENT_DEFAULT_IN_FLIGHT = 0

interface Best {
  tune(s: ProducerSettings): ProducerSettings
  /** Where the settings come from, shown next to the number. */
  source: string
  /** send() calls the bench keeps awaiting acknowledgement (default: the like-for-like WINDOW). */
  window?: number
}

/**
 * For a client with an accumulator, awaiting 5 sends of 816 records caps it below what its
 * batching can do once linger.ms is 50: each batch waits out the linger half-empty, and the
 * run measures the bench (about 80,000 records/s), not the client. Java's ProducerPerformance
 * never waits for a send; it blocks only on buffer.memory (32 MiB). 64 outstanding calls
 * (about 7 MB) fill 5 requests of 200 kB batches on 6 partitions, within Java's buffer.
 */
export const ACCUMULATOR_WINDOW = 64

// Confluent's "Optimize Confluent Cloud clients for throughput": batch.size 100000-200000,
// linger.ms 10-100 (the top of the batch range, linger in the middle).
const javaGuide = (s: ProducerSettings): ProducerSettings => ({ ...s, lingerMs: 50, batchBytes: 200_000 })
// kafkajs has no accumulator (a send() call is a batch) and no linger; its in-flight default is
// unbounded, idempotence caps it at 1.
const kafkajsDefaults = (s: ProducerSettings): ProducerSettings => ({ ...s, maxInFlight: s.idempotent ? 1 : CLIENT_DEFAULT_IN_FLIGHT })

export const BEST: Record<Contender, Best> = {
  java: { tune: javaGuide, source: "Confluent's throughput guide: batch.size 200000, linger.ms 50" },
  // tidelog batches as Java does and documents no tuning of its own: Java's guide applies.
  tidelog: { tune: javaGuide, window: ACCUMULATOR_WINDOW, source: `tidelog has Java's batching and no guide of its own: Java's (batchBytes 200000, lingerMs 50), ${ACCUMULATOR_WINDOW} send() calls outstanding` },
  'tidelog-node22': { tune: javaGuide, window: ACCUMULATOR_WINDOW, source: `as tidelog: batchBytes 200000, lingerMs 50, ${ACCUMULATOR_WINDOW} send() calls outstanding` },
  'tidelog-kafkajs': { tune: kafkajsDefaults, source: 'kafkajs API: in-flight unbounded (kafkajs default)' },
  kafkajs: { tune: kafkajsDefaults, source: 'kafkajs defaults: in-flight unbounded (1 with idempotence); no linger or batch size exists' },
  // Neither version has linger, batch-size or in-flight options: the like-for-like run is its best.
  platformatic: { tune: (s) => s, source: '@platformatic/kafka has no linger, batch-size or in-flight option' },
  'platformatic-2': { tune: (s) => s, source: '@platformatic/kafka has no linger, batch-size or in-flight option' },
  // librdkafka's defaults are its documented throughput settings (INTRODUCTION.md: raise linger.ms,
  // do not await each send): linger.ms 5, batch.size 1000000, max.in.flight 1000000 (5 with idempotence).
  confluent: {
    tune: (s) => ({ ...s, lingerMs: 5, batchBytes: 1_000_000, maxInFlight: s.idempotent ? 5 : CLIENT_DEFAULT_IN_FLIGHT }),
    window: ACCUMULATOR_WINDOW,
    source: `librdkafka's defaults: linger.ms 5, batch.size 1000000, max.in.flight 1000000; ${ACCUMULATOR_WINDOW} send() calls outstanding`,
  },
}

/**
 * What a client cannot set the way the like-for-like row asks, said next to its number. The
 * compression level is each library's default everywhere (none lets it be set from these clients
 * alike; Java's gzip default level is zlib's 6, as is Node's).
 */
export const LIKE_CAVEATS: Partial<Record<Contender, (s: ProducerSettings) => string>> = {
  kafkajs: (s) => `kafkajs: no linger or batch size (a send() call is its batch)${s.idempotent ? ', 1 request in flight (its limit with idempotence)' : ''}`,
  'tidelog-kafkajs': (s) => `tidelog-kafkajs: driven through the kafkajs API, so as kafkajs${s.idempotent ? ' (1 in flight with idempotence)' : ''}`,
  platformatic: (s) => `@platformatic/kafka: no linger, batch size or in-flight option${s.idempotent ? '; 1 send() at a time with idempotence' : ''}`,
  'platformatic-2': (s) => `@platformatic/kafka 2.x: no linger, batch size or in-flight option${s.idempotent ? '; 1 send() at a time with idempotence' : ''}`,
  confluent: () => 'confluent: acks and compression per producer (its API); linger.ms, batch.size and max.in.flight set as given',
}
