import type { Serde } from '@tidelog/client'
import { InvalidStateStoreException, StreamsException, TopologyException } from '../errors.js'
import type { ProcessorContext, ProcessorSupplier } from '../processor.js'
import { Record, type Headers } from '../record.js'
import { serializeSync, type StateStore, type StateStoreContext, type StoreBuilder } from '../store.js'
import type { Change } from '../dsl/processors.js'
import { Windowed } from './windows.js'
import { KTable } from '../dsl/ktable.js'
import { lazySerde, type StreamsBuilder } from '../dsl/streams-builder.js'

/** What a full buffer does (Java's BufferFullStrategy). */
export type BufferFullStrategy = 'EMIT' | 'SHUT_DOWN'

/** Java's Suppressed.BufferConfig: bounds in records and bytes, what to do when full, changelog on/off. */
export class BufferConfig {
  private constructor(
    readonly maxRecords: number,
    readonly maxBytes: number,
    readonly strategy: BufferFullStrategy,
    readonly loggingEnabled: boolean,
    readonly logConfig: Readonly<{ [k: string]: string }>,
  ) {}

  private static bound(n: number, what: string): number {
    if (!Number.isSafeInteger(n) && n !== Number.MAX_SAFE_INTEGER) throw new TypeError(`${what} must be an integer`)
    if (n < 0) throw new RangeError(`${what} must not be negative (got ${n})`)
    return n
  }

  /** No bound: a strict buffer, the one untilWindowCloses needs. */
  static unbounded(): BufferConfig {
    return new BufferConfig(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, 'SHUT_DOWN', true, {})
  }

  static maxRecords(n: number): BufferConfig {
    return new BufferConfig(BufferConfig.bound(n, 'maxRecords'), Number.MAX_SAFE_INTEGER, 'EMIT', true, {})
  }

  static maxBytes(n: number): BufferConfig {
    return new BufferConfig(Number.MAX_SAFE_INTEGER, BufferConfig.bound(n, 'maxBytes'), 'EMIT', true, {})
  }

  withMaxRecords(n: number): BufferConfig {
    return new BufferConfig(BufferConfig.bound(n, 'maxRecords'), this.maxBytes, this.strategy, this.loggingEnabled, this.logConfig)
  }

  withMaxBytes(n: number): BufferConfig {
    return new BufferConfig(this.maxRecords, BufferConfig.bound(n, 'maxBytes'), this.strategy, this.loggingEnabled, this.logConfig)
  }

  withNoBound(): BufferConfig {
    return new BufferConfig(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, 'SHUT_DOWN', this.loggingEnabled, this.logConfig)
  }

  /** Emit the oldest records early when full: results may then be intermediate, not final. */
  emitEarlyWhenFull(): BufferConfig {
    return new BufferConfig(this.maxRecords, this.maxBytes, 'EMIT', this.loggingEnabled, this.logConfig)
  }

  /** Stop the application with a StreamsException when full, rather than emit early. */
  shutDownWhenFull(): BufferConfig {
    return new BufferConfig(this.maxRecords, this.maxBytes, 'SHUT_DOWN', this.loggingEnabled, this.logConfig)
  }

  withLoggingDisabled(): BufferConfig {
    return new BufferConfig(this.maxRecords, this.maxBytes, this.strategy, false, {})
  }

  withLoggingEnabled(config: { [k: string]: string } = {}): BufferConfig {
    return new BufferConfig(this.maxRecords, this.maxBytes, this.strategy, true, { ...config })
  }
}

/** Java's Suppressed: hold KTable updates back until a window closes or for a time limit. */
export class Suppressed<K> {
  private constructor(
    readonly finalResults: boolean,
    readonly timeToWaitMs: number,
    readonly bufferConfig: BufferConfig,
    readonly name: string | undefined,
  ) {}

  /**
   * One final result per window, when stream time passes its end plus the grace period. Only for
   * windowed tables, with a buffer that never emits early (unbounded or shutDownWhenFull).
   */
  static untilWindowCloses<K>(bufferConfig: BufferConfig): Suppressed<Windowed<K>> {
    if (bufferConfig.strategy !== 'SHUT_DOWN') throw new TypeError('untilWindowCloses needs a strict buffer: BufferConfig.unbounded() or a bound with shutDownWhenFull()')
    return new Suppressed<Windowed<K>>(true, 0, bufferConfig, undefined)
  }

  /** The latest update per key, once `timeToWaitMs` of stream time passed since the key's first buffered update. */
  static untilTimeLimit<K>(timeToWaitMs: number, bufferConfig: BufferConfig): Suppressed<K> {
    if (!Number.isSafeInteger(timeToWaitMs) || timeToWaitMs < 0) throw new RangeError(`timeToWaitForMoreEvents must be a non-negative integer (got ${timeToWaitMs})`)
    return new Suppressed<K>(false, timeToWaitMs, bufferConfig, undefined)
  }

  withName(name: string): Suppressed<K> {
    if (!name) throw new TypeError('name cannot be empty')
    return new Suppressed<K>(this.finalResults, this.timeToWaitMs, this.bufferConfig, name)
  }
}

interface Buffered {
  key: unknown
  keyBytes: Buffer
  time: number
  change: Change<unknown>
  prior: Buffer | null
  old: Buffer | null
  next: Buffer | null
  /** Java keeps the first update's old value as the prior one: the same bytes are counted once. */
  priorIsOld: boolean
  timestamp: number
  headers: Headers
  topic: string
  partition: number
  offset: number
}

const NULL_VALUE = -1
const OLD_IS_PRIOR = -2

/**
 * Java's InMemoryTimeOrderedKeyValueChangeBuffer: one entry per key, ordered by (buffer time,
 * key bytes). An update keeps its key's place (the first buffer time: "non-resetting"); size in
 * bytes is Java's estimate. With logging on, each change is written to the changelog in Java's
 * v3 layout (record context, prior, old and new value, buffer time).
 */
export class SuppressionBuffer implements StateStore {
  readonly persistent = false
  private readonly entries = new Map<string, Buffered>()
  private context: StateStoreContext | undefined
  private open = false
  bytes = 0

  constructor(readonly name: string, private readonly logging: boolean) {}

  init(context: StateStoreContext): void {
    this.context = context
    this.open = true
  }

  isOpen(): boolean {
    return this.open
  }

  flush(): void {}

  close(): void {
    this.open = false
  }

  numRecords(): number {
    return this.entries.size
  }

  /** @internal */
  put(e: Omit<Buffered, 'prior' | 'priorIsOld' | 'time'> & { time: number }): void {
    this.checkOpen()
    const id = e.keyBytes.toString('latin1')
    const prev = this.entries.get(id)
    const entry: Buffered = prev === undefined
      ? { ...e, prior: e.old, priorIsOld: true }
      : { ...e, time: prev.time, prior: prev.prior, priorIsOld: false }
    if (prev !== undefined) this.bytes -= size(prev)
    this.bytes += size(entry)
    this.entries.set(id, entry)
    this.log(entry)
  }

  /** @internal Removes and returns entries in (time, key bytes) order while `more()` holds. */
  evictWhile(more: (minTime: number) => boolean, emit: (e: Buffered) => void): void {
    const sorted = [...this.entries.entries()].sort((a, b) => a[1].time - b[1].time || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    for (const [id, e] of sorted) {
      if (!more(e.time)) return
      this.entries.delete(id)
      this.bytes -= size(e)
      if (this.logging && this.context) this.context.logChange(this.name, e.keyBytes, null, this.context.currentTimestamp())
      emit(e)
    }
  }

  private log(e: Buffered): void {
    if (!this.logging || !this.context) return
    const topic = Buffer.from(e.topic, 'utf8')
    const parts: Buffer[] = []
    const head = Buffer.alloc(8 + 8 + 4)
    head.writeBigInt64BE(BigInt(e.timestamp), 0)
    head.writeBigInt64BE(BigInt(e.offset), 8)
    head.writeInt32BE(topic.length, 16)
    parts.push(head, topic, int32(e.partition), int32(e.headers.length))
    for (const h of e.headers) {
      const k = Buffer.from(h.key, 'utf8')
      parts.push(int32(k.length), k)
      if (h.value === null || h.value === undefined) parts.push(int32(-1))
      else parts.push(int32(h.value.length), Buffer.from(h.value))
    }
    const value = (b: Buffer | null) => (b === null ? [int32(NULL_VALUE)] : [int32(b.length), b])
    parts.push(...value(e.prior))
    if (e.old === null) parts.push(int32(NULL_VALUE))
    else if (e.prior !== null && e.prior.equals(e.old)) parts.push(int32(OLD_IS_PRIOR))
    else parts.push(int32(e.old.length), e.old)
    parts.push(...value(e.next))
    const time = Buffer.alloc(8)
    time.writeBigInt64BE(BigInt(e.time))
    parts.push(time)
    this.context.logChange(this.name, e.keyBytes, Buffer.concat(parts), this.context.currentTimestamp())
  }

  private checkOpen(): void {
    if (!this.open) throw new InvalidStateStoreException(`Store ${this.name} is currently closed.`)
  }
}

function int32(n: number): Buffer {
  const b = Buffer.alloc(4)
  b.writeInt32BE(n)
  return b
}

/** Java's computeRecordSize + BufferValue and ProcessorRecordContext residentMemorySizeEstimate. */
function size(e: Buffered): number {
  let n = 8 + e.keyBytes.length
  n += (e.prior?.length ?? 0) + (e.old === null || e.priorIsOld ? 0 : e.old.length) + (e.next?.length ?? 0)
  n += 8 + 8 + e.topic.length + 4
  for (const h of e.headers) n += h.key.length + (h.value?.length ?? 0)
  return n
}

export class SuppressionBufferBuilder implements StoreBuilder<SuppressionBuffer> {
  loggingEnabled: boolean
  logConfig: Readonly<{ [k: string]: string }>

  constructor(readonly name: string, config: BufferConfig) {
    this.loggingEnabled = config.loggingEnabled
    this.logConfig = config.logConfig
  }

  withLoggingEnabled(config: { [k: string]: string } = {}): this {
    this.loggingEnabled = true
    this.logConfig = { ...config }
    return this
  }

  withLoggingDisabled(): this {
    this.loggingEnabled = false
    this.logConfig = {}
    return this
  }

  build(): SuppressionBuffer {
    return new SuppressionBuffer(this.name, this.loggingEnabled)
  }
}

/**
 * Java's KTableSuppressProcessor: buffer each update under its key, then emit (oldest first)
 * everything whose buffer time is at or before `streamTime - wait`; over capacity, emit early
 * or fail. untilWindowCloses drops tombstones (a merged-away session was never final).
 */
export function suppressProcessor<K, V>(nodeName: string, storeName: string, suppressed: Suppressed<K>, waitMs: number, keySerde: Serde<K>, valueSerde: Serde<V>): ProcessorSupplier<K, Change<V>, K, Change<V>> {
  const { maxRecords, maxBytes, strategy } = suppressed.bufferConfig
  return () => {
    let ctx!: ProcessorContext<K, Change<V>>
    let buffer!: SuppressionBuffer
    let streamTime = -1
    const over = () => buffer.numRecords() > maxRecords || buffer.bytes > maxBytes
    const emit = (e: Buffered) => {
      const change = e.change as Change<V>
      if (change.newValue === null && suppressed.finalResults) return
      ctx.forward(new Record(e.key as K, change, e.timestamp, e.headers))
    }
    return {
      init: (c) => {
        ctx = c
        buffer = c.getStateStore(storeName)
      },
      process: (r) => {
        streamTime = Math.max(streamTime, r.timestamp)
        let time = r.timestamp
        if (suppressed.finalResults) {
          if (!(r.key instanceof Windowed)) throw new StreamsException('untilWindowCloses needs windowed keys')
          time = r.key.window.end
        }
        const meta = ctx.recordMetadata()
        const bytes = (v: V | null) => (v === null || v === undefined ? null : serializeSync(valueSerde, v, false))
        buffer.put({
          key: r.key,
          keyBytes: serializeSync(keySerde, r.key, true),
          time,
          change: r.value,
          old: bytes(r.value.oldValue),
          next: bytes(r.value.newValue),
          timestamp: r.timestamp,
          headers: r.headers,
          topic: meta?.topic ?? '',
          partition: meta?.partition ?? -1,
          offset: meta?.offset ?? -1,
        })
        const expiry = streamTime - waitMs
        buffer.evictWhile((t) => t <= expiry, emit)
        if (!over()) return
        if (strategy === 'EMIT') {
          buffer.evictWhile(() => over(), emit)
          return
        }
        throw new StreamsException(`${nodeName} buffer exceeded its max capacity. Currently [${buffer.numRecords()}/${maxRecords}] records and [${buffer.bytes}/${maxBytes}] bytes.`)
      },
    }
  }
}

/** Windowed aggregations register, by node, how long their windows stay open (for untilWindowCloses). */
const windowGrace = new WeakMap<object, Map<string, number>>()

export function registerWindowGrace(builder: StreamsBuilder, node: string, graceMs: number): void {
  let m = windowGrace.get(builder.internal)
  if (m === undefined) {
    m = new Map()
    windowGrace.set(builder.internal, m)
  }
  m.set(node, graceMs)
}

/**
 * Java's GraphGraceSearchUtil: walks up from the suppressed table (through filters, mapValues,
 * ...) to the windowed aggregation; the largest grace when several parents have one.
 */
export function windowGraceOf(builder: StreamsBuilder, node: string, chain = ''): number {
  const g = windowGrace.get(builder.internal)?.get(node)
  if (g !== undefined) return g
  const next = chain === '' ? node : `${node}->${chain}`
  const preds = builder.internal.topology.nodes.get(node)?.predecessors ?? []
  if (preds.length === 0) throw new TopologyException(`Window close time is only defined for windowed computations. Got [root->${next}].`)
  return Math.max(...preds.map((p) => windowGraceOf(builder, p, next)))
}

/**
 * Java's KTableImpl#suppress: the processor name is drawn before the buffer's store name
 * (`<name>-store` when Suppressed is named); the parent table must send old values.
 */
export function suppressTable<K, V>(table: KTable<K, V>, builder: StreamsBuilder, suppressed: Suppressed<K>): KTable<K, V> {
  const b = builder.internal
  const name = suppressed.name ?? b.newProcessorName('KTABLE-SUPPRESS-')
  const wait = suppressed.finalResults ? windowGraceOf(builder, table.nodeName) : suppressed.timeToWaitMs
  const storeName = suppressed.name !== undefined ? `${suppressed.name}-store` : b.newStoreName('KTABLE-SUPPRESS-')
  table.enableSendingOldValues(true)
  const keySerde = lazySerde(table.keySerde, builder.defaults, true) as Serde<K>
  const valueSerde = lazySerde(table.valueSerde, builder.defaults, false) as Serde<V>
  b.topology.addProcessor(name, suppressProcessor(name, storeName, suppressed, wait, keySerde, valueSerde), [table.nodeName])
  b.topology.addStateStore(new SuppressionBufferBuilder(storeName, suppressed.bufferConfig), [name])
  return new KTable<K, V>(builder, name, table.keySerde, table.valueSerde, undefined, { enabled: true })
}
