import type { Serde } from '@tidelog/client'
import { StreamsException } from '../errors.js'
import type { KeyValue } from '../store.js'
import { windowStoreKeyBinary, type WindowStore } from '../windows/window-store.js'
import { Window, Windowed } from '../windows/windows.js'
import { SegmentedLmdbStore } from './segmented-store.js'

const MAX_SEQ = 0x7fffffff

/** Splits a stored `[key][8-byte start][4-byte seqnum]` (Java's WindowKeySchema). */
function parse(stored: Buffer): { key: Buffer; start: number; seq: number } {
  const n = stored.length - 12
  return { key: stored.subarray(0, n), start: Number(stored.readBigInt64BE(n)), seq: stored.readInt32BE(n + 8) }
}

/**
 * Java's RocksDBWindowStore on LMDB: segments by window start, each keyed in Java's WindowKeySchema
 * (`[key][start][seqnum]`, the changelog's key too), so one key's windows are adjacent. Retention
 * and expiry as the in-memory store (a window at or before `observedStreamTime - retention` is
 * dropped and never read). Range queries over several keys come back segment by segment, key
 * bytes then time within one, as Java's RocksDB store gives them (the in-memory store orders by time first).
 */
export class PersistentWindowStore<K, V> extends SegmentedLmdbStore<K, V> implements WindowStore<K, V> {
  private seqnum = 0

  constructor(
    name: string,
    retentionPeriodMs: number,
    readonly windowSizeMs: number,
    readonly retainDuplicates: boolean,
    keySerde: Serde<K>,
    valueSerde: Serde<V>,
    logging: boolean,
    readonly timestamped = false,
  ) {
    super(name, retentionPeriodMs, keySerde, valueSerde, logging)
  }

  protected timeOf(stored: Buffer): number {
    return parse(stored).start
  }

  put(key: K, value: V | null, windowStartTimestamp: number): void {
    this.open()
    const v = this.valueBytes(value)
    const seq = this.retainDuplicates ? (this.seqnum = (this.seqnum + 1) & MAX_SEQ) : 0
    const stored = windowStoreKeyBinary(this.k(key), windowStartTimestamp, seq)
    if (v !== null || !this.retainDuplicates) this.putStored(stored, v)
    this.logChange(stored, v)
  }

  restore(changelogKey: Buffer, value: Buffer | null): void {
    if (changelogKey.length < 12) throw new StreamsException(`window store ${this.name}: changelog key of ${changelogKey.length} bytes is shorter than its timestamp and sequence number`)
    this.putStored(changelogKey, value)
  }

  fetch(key: K, time: number): V | undefined
  fetch(key: K, timeFrom: number, timeTo: number): KeyValue<number, V>[]
  fetch(keyFrom: K | undefined, keyTo: K | undefined, timeFrom: number, timeTo: number): KeyValue<Windowed<K>, V>[]
  fetch(...args: unknown[]): unknown {
    this.open()
    if (args.length === 2) {
      const [key, time] = args as [K, number]
      const first = this.single(this.k(key), time, time)[0]
      return first === undefined ? undefined : this.v(first[1])
    }
    if (args.length === 3) {
      const [key, from, to] = args as [K, number, number]
      return this.single(this.k(key), from, to).map(([s, v]) => ({ key: parse(s).start, value: this.v(v) }))
    }
    const [kf, kt, from, to] = args as [K | undefined, K | undefined, number, number]
    return this.multi(kf === undefined ? undefined : this.k(kf), kt === undefined ? undefined : this.k(kt), from, to)
  }

  backwardFetch(key: K, timeFrom: number, timeTo: number): KeyValue<number, V>[]
  backwardFetch(keyFrom: K | undefined, keyTo: K | undefined, timeFrom: number, timeTo: number): KeyValue<Windowed<K>, V>[]
  backwardFetch(...args: unknown[]): unknown {
    return ((this.fetch as (...a: unknown[]) => unknown[])(...args)).reverse()
  }

  fetchAll(timeFrom: number, timeTo: number): KeyValue<Windowed<K>, V>[] {
    this.open()
    return this.multi(undefined, undefined, timeFrom, timeTo)
  }

  backwardFetchAll(timeFrom: number, timeTo: number): KeyValue<Windowed<K>, V>[] {
    return this.fetchAll(timeFrom, timeTo).reverse()
  }

  all(): KeyValue<Windowed<K>, V>[] {
    return this.fetchAll(0, Number.MAX_SAFE_INTEGER)
  }

  backwardAll(): KeyValue<Windowed<K>, V>[] {
    return this.all().reverse()
  }

  /** One key's windows in [from, to], by start then sequence number: a bounded scan of each segment. */
  private single(key: Buffer, from: number, to: number): [Buffer, Buffer][] {
    const lo = this.liveFrom(from)
    if (lo > to) return []
    const out: [Buffer, Buffer][] = []
    for (const seg of this.open().between(lo, to)) {
      // Clamped: a negative time in two's complement big-endian would sort after every real one.
      for (const e of seg.range(windowStoreKeyBinary(key, Math.max(0, lo), 0), windowStoreKeyBinary(key, to, MAX_SEQ))) {
        // A longer key with this one as its prefix can sort inside the bounds: only exact keys count.
        if (e[0].length === key.length + 12 && e[0].compare(key, 0, key.length, 0, key.length) === 0) out.push(e)
      }
    }
    return out
  }

  private multi(from: Buffer | undefined, to: Buffer | undefined, timeFrom: number, timeTo: number): KeyValue<Windowed<K>, V>[] {
    if (from !== undefined && to !== undefined && Buffer.compare(from, to) > 0) return []
    const lo = this.liveFrom(timeFrom)
    const out: KeyValue<Windowed<K>, V>[] = []
    const push = (stored: Buffer, v: Buffer) => {
      const { key, start } = parse(stored)
      out.push({ key: new Windowed(this.key(key), new Window(start, start + this.windowSizeMs)), value: this.v(v) })
    }
    if (from !== undefined && to !== undefined && from.equals(to)) {
      for (const [s, v] of this.single(from, lo, timeTo)) push(s, v)
      return out
    }
    if (lo > timeTo) return out
    // Key-first bytes with variable-length keys have no tight bounds across keys: scan from the lower key and filter.
    for (const seg of this.open().between(lo, timeTo)) {
      for (const [s, v] of seg.range(from, undefined)) {
        const { key, start } = parse(s)
        if (start < lo || start > timeTo) continue
        if (from !== undefined && Buffer.compare(key, from) < 0) continue
        if (to !== undefined && Buffer.compare(key, to) > 0) continue
        push(s, v)
      }
    }
    return out
  }
}
