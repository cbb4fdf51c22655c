import type { ClientOptions } from '@tidelog/client'
import { CompressionType, compressionTypeOf, type CompressionName } from '@tidelog/protocol'
import type { Partitioner } from './partitioners/types.js'

export type Acks = 'all' | -1 | 0 | 1

export interface ProducerOptions extends ClientOptions {
  /** Replicas that must have a record before it counts as written: 0, 1 or 'all' (-1). Default 'all'. */
  acks?: Acks
  /**
   * Java's enable.idempotence: a producer id and per-partition sequence numbers let the broker
   * drop duplicates from retries, so nothing is written twice or out of order. Default true;
   * left unset, it turns itself off where it cannot work (acks other than all, maxInFlight above
   * 5, a broker without InitProducerId), as Java's implicit default does (KIP-679). Set to true,
   * those are errors.
   */
  idempotent?: boolean
  /** Default 'none'. */
  compression?: CompressionName | CompressionType
  /** How long a batch waits for more records before it is sent. Default 5 (Java's since 4.0, KIP-1030). */
  lingerMs?: number
  /** Java's batch.size: a partition's batch is sent once it holds this much (compressed, estimated). Default 16384. */
  batchBytes?: number
  /** Java's max.request.size: the largest Produce request, and so the largest record. Default 1 MiB. */
  maxRequestBytes?: number
  /** Java's buffer.memory: records queued and in flight, in bytes. Default 32 MiB. */
  bufferMemory?: number
  /** How long send() may wait for buffer room or topic metadata before failing the record. Default 60 s. */
  maxBlockMs?: number
  /**
   * Produce requests in flight per broker. Default 5 (at most 5 with idempotence). Without
   * idempotence, a retried batch can then land after a later one, as in Java; 1 keeps order.
   */
  maxInFlight?: number
  /** A record fails if not acknowledged this long after its send() call (waiting for metadata and room, batching, retries). Default 120 s. */
  deliveryTimeoutMs?: number
  /** Retries of a batch on retriable errors, within deliveryTimeoutMs. Default unlimited. */
  retries?: number
  /** Default: murmur2 of the key for keyed records, uniform sticky for the rest (Java's). */
  partitioner?: Partitioner
  /**
   * Java's metadata.max.idle.ms: a topic no send() used for this long is forgotten (its
   * metadata, partitioner state and queues), so a producer writing to ever new topic names
   * keeps bounded memory and metadata requests. Sending to it again looks it up afresh. Default 300000.
   */
  metadataMaxIdleMs?: number
  /**
   * Java's transactional.id: makes the producer transactional (initTransactions(),
   * beginTransaction(), commitTransaction(), ...). Needs idempotence, which it turns on.
   */
  transactionalId?: string
  /** Java's transaction.timeout.ms: the coordinator aborts a transaction open longer than this. Default 60000. */
  transactionTimeoutMs?: number
}

export interface ResolvedOptions {
  acks: -1 | 0 | 1
  idempotent: boolean
  /** Whether the user asked for idempotence explicitly (then it may not quietly turn off). */
  idempotenceExplicit: boolean
  compression: CompressionType
  lingerMs: number
  batchBytes: number
  maxRequestBytes: number
  bufferMemory: number
  maxBlockMs: number
  maxInFlight: number
  deliveryTimeoutMs: number
  retries: number
  requestTimeoutMs: number
  metadataMaxIdleMs: number
  transactionalId: string | undefined
  transactionTimeoutMs: number
}

/** Java's request.timeout.ms default. */
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000

function number(options: ProducerOptions, key: keyof ProducerOptions, fallback: number, min: number): number {
  const v = options[key]
  if (v === undefined) return fallback
  if (typeof v !== 'number' || Number.isNaN(v) || v < min) throw new RangeError(`${String(key)} must be a number >= ${min}, got ${String(v)}`)
  return v
}

function acksOf(a: Acks | undefined): -1 | 0 | 1 {
  if (a === undefined || a === 'all' || a === -1) return -1
  if (a === 0 || a === 1) return a
  throw new RangeError(`acks must be 0, 1, 'all' or -1, got ${String(a)}`)
}

/** Validates the options and fills in the defaults, applying Java's rules for idempotence. */
export function resolveOptions(options: ProducerOptions): ResolvedOptions {
  const acks = acksOf(options.acks)
  const lingerMs = number(options, 'lingerMs', 5, 0)
  const requestTimeoutMs = number(options, 'requestTimeoutMs', DEFAULT_REQUEST_TIMEOUT_MS, 1)
  const maxInFlight = number(options, 'maxInFlight', 5, 1)
  const retries = number(options, 'retries', Infinity, 0)
  // Java's rule: delivery.timeout.ms >= linger.ms + request.timeout.ms, so a batch gets at least
  // one full attempt; an explicit smaller value is a mistake, the default grows to fit.
  const minDelivery = lingerMs + requestTimeoutMs
  let deliveryTimeoutMs: number
  if (options.deliveryTimeoutMs === undefined) {
    deliveryTimeoutMs = Math.max(120_000, minDelivery)
  } else {
    deliveryTimeoutMs = number(options, 'deliveryTimeoutMs', 0, 1)
    if (deliveryTimeoutMs < minDelivery) {
      throw new RangeError(`deliveryTimeoutMs (${deliveryTimeoutMs}) must be at least lingerMs + requestTimeoutMs (${minDelivery})`)
    }
  }
  const transactionalId = options.transactionalId
  if (transactionalId !== undefined && (typeof transactionalId !== 'string' || transactionalId === '')) {
    throw new RangeError(`transactionalId must be a non-empty string, got ${String(transactionalId)}`)
  }
  if (transactionalId !== undefined && options.idempotent === false) throw new RangeError('transactionalId needs idempotence: idempotent: false conflicts with it')
  // A transactional producer cannot quietly give idempotence up (Java's ConfigException).
  const explicit = options.idempotent !== undefined || transactionalId !== undefined
  let idempotent = options.idempotent ?? true
  if (idempotent) {
    const conflict =
      acks !== -1 ? `acks=${acks} (idempotence needs acks 'all')` :
      maxInFlight > 5 ? `maxInFlight=${maxInFlight} (idempotence allows at most 5)` :
      retries === 0 ? 'retries=0 (idempotence needs retries)' : undefined
    if (conflict !== undefined) {
      if (explicit) throw new RangeError(`${transactionalId !== undefined && options.idempotent === undefined ? 'transactionalId' : 'idempotent: true'} conflicts with ${conflict}`)
      idempotent = false
    }
  }
  let compression: CompressionType
  try {
    compression = compressionTypeOf(options.compression ?? CompressionType.None)
  } catch {
    throw new RangeError(`compression must be none, gzip, snappy, lz4 or zstd, got ${String(options.compression)}`)
  }
  if (!(compression >= 0 && compression <= 4)) throw new RangeError(`unknown compression type ${String(options.compression)}`)
  return {
    acks,
    idempotent,
    idempotenceExplicit: explicit && idempotent,
    compression,
    lingerMs,
    batchBytes: number(options, 'batchBytes', 16_384, 1),
    maxRequestBytes: number(options, 'maxRequestBytes', 1_048_576, 128),
    bufferMemory: number(options, 'bufferMemory', 32 * 1024 * 1024, 128),
    maxBlockMs: number(options, 'maxBlockMs', 60_000, 0),
    maxInFlight,
    deliveryTimeoutMs,
    retries,
    requestTimeoutMs,
    metadataMaxIdleMs: number(options, 'metadataMaxIdleMs', 300_000, 1),
    transactionalId,
    transactionTimeoutMs: number(options, 'transactionTimeoutMs', 60_000, 1),
  }
}
