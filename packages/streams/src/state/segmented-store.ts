import type { Serde } from '@tidelog/client'
import { InvalidStateStoreException, StreamsException } from '../errors.js'
import { deserializeSync, openStoreEnv, serializeSync, type StateStoreContext } from '../store.js'
import type { LmdbEnv } from './lmdb.js'
import { defaultSegmentInterval, MAX_SEGMENT_DBS, Segments } from './segments.js'

/**
 * What Java's RocksDB window and session stores share (AbstractRocksDBSegmentedBytesStore): an
 * LMDB environment of time segments in the task directory, the stream time seen in the stored
 * keys, retention (a record at or before `observedStreamTime - retention` is dropped, counted,
 * and never read), changelog writes, and the open / flush / close / wipe lifecycle. Subclasses say
 * which time a stored key is segmented by (window start, session end) and answer the queries.
 */
export abstract class SegmentedLmdbStore<K, V> {
  readonly persistent = true
  private env: LmdbEnv | undefined
  private segments: Segments | undefined
  protected observedStreamTime = -1
  private context: StateStoreContext | undefined
  expiredRecords = 0

  constructor(
    readonly name: string,
    readonly retentionPeriodMs: number,
    protected readonly keySerde: Serde<K>,
    protected readonly valueSerde: Serde<V>,
    protected readonly logging: boolean,
  ) {}

  /** The time a stored key is segmented and expired by. */
  protected abstract timeOf(stored: Buffer): number

  init(context: StateStoreContext): void {
    this.context = context
    this.env = openStoreEnv(this.name, this.logging, context, MAX_SEGMENT_DBS)
    this.segments = new Segments(this.env, this.name, defaultSegmentInterval(this.retentionPeriodMs))
    // A reopened store finds its stream time again in its newest segment.
    for (const [k] of this.segments.newest()?.range(undefined, undefined) ?? []) this.observedStreamTime = Math.max(this.observedStreamTime, this.timeOf(k))
  }

  isOpen(): boolean {
    return this.segments !== undefined
  }

  /** Empties the store before a restore from the start (its local state is not trusted). */
  wipe(): void {
    this.open().clear()
    this.observedStreamTime = -1
  }

  flush(): void {
    this.segments?.flush()
  }

  close(): void {
    this.segments?.flush()
    this.segments = undefined
    this.env?.close()
    this.env = undefined
  }

  /** Writes one stored key (absent from the changelog while restoring). */
  protected putStored(stored: Buffer, value: Buffer | null): void {
    const segments = this.open()
    const time = this.timeOf(stored)
    this.observedStreamTime = Math.max(this.observedStreamTime, time)
    if (time <= this.observedStreamTime - this.retentionPeriodMs) {
      this.expiredRecords++
      return
    }
    segments.get(segments.segmentId(time), value !== null)?.put(stored, value)
    segments.expire(this.observedStreamTime, this.retentionPeriodMs)
  }

  protected logChange(stored: Buffer, value: Buffer | null): void {
    if (this.logging && this.context) this.context.logChange(this.name, stored, value, this.context.currentTimestamp())
  }

  /** The earliest time a read may still see. */
  protected liveFrom(from: number): number {
    return Math.max(from, this.observedStreamTime - this.retentionPeriodMs + 1)
  }

  protected open(): Segments {
    if (this.segments === undefined) throw new InvalidStateStoreException(`Store ${this.name} is currently closed.`)
    return this.segments
  }

  protected k(key: K): Buffer {
    if (key === null || key === undefined) throw new StreamsException(`Store ${this.name}: a key may not be null`)
    return serializeSync(this.keySerde, key, true)
  }

  protected valueBytes(value: V | null): Buffer | null {
    return value === null || value === undefined ? null : serializeSync(this.valueSerde, value, false)
  }

  protected v(b: Buffer): V {
    return deserializeSync(this.valueSerde, b, false)
  }

  protected key(b: Buffer): K {
    return deserializeSync(this.keySerde, Buffer.from(b), true)
  }
}
