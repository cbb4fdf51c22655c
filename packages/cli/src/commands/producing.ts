import { Producer, type Acks, type ProducerOptions, type ProducerRecord, type RecordMetadata } from '@tidelog/producer'
import type { OptionSpec, Parsed } from '../args.js'
import type { Context } from '../context.js'
import { CliError, UsageError } from '../errors.js'

export const PRODUCER_OPTIONS: OptionSpec[] = [
  { name: 'acks', kind: 'value', arg: '0|1|all', help: 'acknowledgements to wait for (default all)' },
  { name: 'compression', short: 'z', kind: 'value', arg: 'CODEC', help: 'none, gzip, snappy, lz4 or zstd (default none)' },
  { name: 'linger-ms', kind: 'value', arg: 'MS', help: 'how long a batch waits for more records (default 5)' },
  { name: 'batch-size', kind: 'value', arg: 'BYTES', help: 'batch size per partition (default 16384)' },
  { name: 'max-request-size', kind: 'value', arg: 'BYTES', help: 'largest request, so largest record (default 1048576)' },
]

export function parseAcks(v: string | undefined): Acks | undefined {
  if (v === undefined) return undefined
  if (v === 'all' || v === '-1') return 'all'
  if (v === '0') return 0
  if (v === '1') return 1
  throw new UsageError(`--acks must be 0, 1 or all, got ${JSON.stringify(v)}`)
}

const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const

export function producerOptions(ctx: Context, p: Parsed): ProducerOptions {
  const compression = p.values.get('compression')
  if (compression !== undefined && !(CODECS as readonly string[]).includes(compression)) {
    throw new UsageError(`--compression must be one of ${CODECS.join(', ')}, got ${JSON.stringify(compression)}`)
  }
  const num = (name: string) => {
    const v = p.values.get(name)
    if (v === undefined) return undefined
    const n = Number(v)
    if (!Number.isInteger(n) || n < 0) throw new UsageError(`--${name} must be a non-negative integer, got ${JSON.stringify(v)}`)
    return n
  }
  const c = ctx.connection
  const lingerMs = num('linger-ms')
  return {
    ...c.client,
    acks: parseAcks(p.values.get('acks')),
    compression: compression as (typeof CODECS)[number] | undefined,
    lingerMs,
    batchBytes: num('batch-size'),
    maxRequestBytes: num('max-request-size'),
    maxBlockMs: c.timeoutMs,
    // --timeout bounds a record's delivery too (Java's 2 min delivery.timeout.ms is long to stare
    // at a terminal), though never below one full attempt, as the producer requires.
    deliveryTimeoutMs: Math.max(c.timeoutMs, (c.client.requestTimeoutMs ?? 30_000) + (lingerMs ?? 5)),
    // The CLI never creates topics behind the user's back: a typo should fail, not make a topic.
    allowAutoTopicCreation: false,
  }
}

/** Partition count of an existing topic, or a clear error naming it. */
export async function partitionCount(ctx: Context, topic: string): Promise<number> {
  const [t] = await ctx.admin().describeTopics([topic])
  return t!.partitions.length
}

/**
 * Sends without waiting for each acknowledgement, at most `window` records unacknowledged
 * (memory stays bounded however large the input); the first failure stops the run.
 */
export class SendWindow {
  private readonly pending: Promise<void>[] = []
  private failure: unknown
  sent = 0
  acked = 0

  constructor(
    readonly producer: Producer,
    private readonly window = 20_000,
    private readonly onAck?: (meta: RecordMetadata, record: ProducerRecord, startedAt: number) => void,
  ) {}

  static open(ctx: Context, options: ProducerOptions): Producer {
    const producer = new Producer(options)
    ctx.onClose(() => producer.close({ timeoutMs: 5_000 }))
    return producer
  }

  async send(record: ProducerRecord): Promise<void> {
    if (this.failure !== undefined) throw this.failure
    const startedAt = performance.now()
    this.sent++
    this.pending.push(
      this.producer.send(record).then(
        (meta) => {
          this.acked++
          this.onAck?.(meta, record, startedAt)
        },
        (err: unknown) => {
          this.failure ??= err
        },
      ),
    )
    if (this.pending.length >= this.window) await this.pending.shift()
  }

  /** Waits for every acknowledgement; throws the first failure. */
  async finish(): Promise<void> {
    await this.producer.flush()
    await Promise.all(this.pending.splice(0))
    if (this.failure !== undefined) throw this.failure
  }
}

/** Keeps `--rate` records/s on average (kcat's and the perf tool's throttle). */
export class RateLimiter {
  private readonly start = performance.now()
  private n = 0
  constructor(private readonly perSecond: number | undefined) {
    if (perSecond !== undefined && !(perSecond > 0)) throw new CliError('--rate must be positive')
  }
  async take(): Promise<void> {
    if (this.perSecond === undefined) return
    this.n++
    const due = this.start + (this.n * 1000) / this.perSecond
    const wait = due - performance.now()
    if (wait > 1) await new Promise((r) => setTimeout(r, wait))
  }
}
