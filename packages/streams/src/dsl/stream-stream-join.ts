import type { Serde } from '@tidelog/client'
import { InvalidStateStoreException } from '../errors.js'
import type { ProcessorContext, ProcessorSupplier } from '../processor.js'
import type { Record as StreamRecord } from '../record.js'
import { serializeSync, type StateStore, type StateStoreContext, type StoreBuilder } from '../store.js'
import { WindowStores, type WindowStore } from '../windows/window-store.js'
import type { JoinWindows } from '../windows/windows.js'
import { createRepartitionedSource, KStream } from './kstream.js'
import { ops } from './processors.js'
import { lazySerde } from './streams-builder.js'

/** Joins a left and a right value (Java's ValueJoinerWithKey, values first); one side is null for a non-joined record. */
export type ValueJoiner<V1, V2, VR, K = unknown> = (left: V1, right: V2, key: K) => VR

/** Java's StreamJoined: serdes, store names and logging of a stream-stream join's window stores. */
export class StreamJoined<K, V1, V2> {
  private constructor(
    readonly keySerde?: Serde<K>,
    readonly valueSerde?: Serde<V1>,
    readonly otherValueSerde?: Serde<V2>,
    readonly name?: string,
    readonly storeName?: string,
    readonly loggingEnabled: boolean = true,
    readonly logConfig: Readonly<{ [k: string]: string }> = {},
  ) {}

  static with<K, V1, V2>(keySerde?: Serde<K>, valueSerde?: Serde<V1>, otherValueSerde?: Serde<V2>): StreamJoined<K, V1, V2> {
    return new StreamJoined(keySerde, valueSerde, otherValueSerde)
  }

  /** Names the stores `<storeName>-this-join-store` / `-other-join-store` (and the shared outer one). */
  static as<K, V1, V2>(storeName: string): StreamJoined<K, V1, V2> {
    return new StreamJoined<K, V1, V2>(undefined, undefined, undefined, undefined, storeName)
  }

  private copy(c: Partial<StreamJoined<K, V1, V2>>): StreamJoined<K, V1, V2> {
    const m = { ...this, ...c }
    return new StreamJoined(m.keySerde, m.valueSerde, m.otherValueSerde, m.name, m.storeName, m.loggingEnabled, m.logConfig)
  }

  /** Names the processors `<name>-this-windowed`, `<name>-this-join`, `<name>-merge`, ... */
  withName(name: string): StreamJoined<K, V1, V2> {
    if (!name) throw new TypeError('name cannot be empty')
    return this.copy({ name })
  }

  withStoreName(storeName: string): StreamJoined<K, V1, V2> {
    return this.copy({ storeName })
  }

  withKeySerde(keySerde: Serde<K>): StreamJoined<K, V1, V2> {
    return this.copy({ keySerde })
  }

  withValueSerde(valueSerde: Serde<V1>): StreamJoined<K, V1, V2> {
    return this.copy({ valueSerde })
  }

  withOtherValueSerde(otherValueSerde: Serde<V2>): StreamJoined<K, V1, V2> {
    return this.copy({ otherValueSerde })
  }

  withLoggingEnabled(config: { [k: string]: string } = {}): StreamJoined<K, V1, V2> {
    return this.copy({ loggingEnabled: true, logConfig: { ...config } })
  }

  withLoggingDisabled(): StreamJoined<K, V1, V2> {
    return this.copy({ loggingEnabled: false, logConfig: {} })
  }
}

/**
 * The outer join's shared store (Java's ListValueStore over a key-value store): keys are
 * `[8-byte timestamp][1 if left side else 0][key]`, so iteration goes by time, then side, then
 * key (Java's TimestampedKeyAndJoinSideSerializer); each key holds a list of values, appended
 * by put, removed all at once by put(key, null). The changelog gets the whole list
 * (`[4-byte length][LeftOrRightValue]...`, where a LeftOrRightValue is `[1 left | 0 right][value]`).
 */
class OuterJoinStore implements StateStore {
  readonly persistent = false
  private readonly map = new Map<string, { key: unknown; side: boolean; timestamp: number; values: { left: boolean; value: unknown; bytes: Buffer }[] }>()
  private context: StateStoreContext | undefined
  private open = false

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

  static storeKey(keyBytes: Buffer, left: boolean, timestamp: number): Buffer {
    const out = Buffer.alloc(9 + keyBytes.length)
    out.writeBigInt64BE(BigInt(timestamp))
    out[8] = left ? 1 : 0
    keyBytes.copy(out, 9)
    return out
  }

  append(storeKey: Buffer, key: unknown, side: boolean, timestamp: number, value: { left: boolean; value: unknown; bytes: Buffer }): void {
    this.checkOpen()
    const id = storeKey.toString('latin1')
    let e = this.map.get(id)
    if (e === undefined) {
      e = { key, side, timestamp, values: [] }
      this.map.set(id, e)
    }
    e.values.push(value)
    this.log(storeKey, e.values)
  }

  /** Java's putIfAbsent(key, null) on a list store: drops the key's list if there is one. */
  deleteIfPresent(storeKey: Buffer): void {
    this.checkOpen()
    if (this.map.delete(storeKey.toString('latin1'))) this.log(storeKey, null)
  }

  delete(id: string): void {
    if (this.map.delete(id)) this.log(Buffer.from(id, 'latin1'), null)
  }

  /** Entries in key-byte order (time, side, key). */
  sorted(): [string, { key: unknown; side: boolean; timestamp: number; values: { left: boolean; value: unknown }[] }][] {
    this.checkOpen()
    return [...this.map.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
  }

  private log(storeKey: Buffer, values: { left: boolean; bytes: Buffer }[] | null): void {
    if (!this.logging || !this.context) return
    let bytes: Buffer | null = null
    if (values !== null) {
      const parts: Buffer[] = []
      for (const v of values) {
        const len = Buffer.alloc(4)
        len.writeInt32BE(v.bytes.length + 1)
        parts.push(len, Buffer.from([v.left ? 1 : 0]), v.bytes)
      }
      bytes = Buffer.concat(parts)
    }
    this.context.logChange(this.name, storeKey, bytes, this.context.currentTimestamp())
  }

  private checkOpen(): void {
    if (!this.open) throw new InvalidStateStoreException(`Store ${this.name} is currently closed.`)
  }
}

class OuterJoinStoreBuilder implements StoreBuilder<OuterJoinStore> {
  loggingEnabled: boolean
  logConfig: Readonly<{ [k: string]: string }>
  constructor(readonly name: string, logging: boolean, config: Readonly<{ [k: string]: string }>) {
    this.loggingEnabled = logging
    this.logConfig = config
  }
  withLoggingEnabled(config: { [k: string]: string } = {}): this {
    this.loggingEnabled = true
    this.logConfig = { ...config }
    return this
  }
  withLoggingDisabled(): this {
    this.loggingEnabled = false
    return this
  }
  build(): OuterJoinStore {
    return new OuterJoinStore(this.name, this.loggingEnabled)
  }
}

/** Java's KStreamImplJoin.TimeTracker, shared by both sides of one join in one task. */
interface TimeTracker {
  streamTime: number
  minTime: number
  nextTimeToEmit: number
}

/**
 * Java's internal __emit.interval.ms.kstreams.outer.join.spurious.results.fix__ (default 1000):
 * non-joined records are looked for at most once per interval of wall-clock time. Java's
 * TopologyTestDriver sets it to 0, and so does ours.
 */
export const OUTER_JOIN_EMIT_INTERVAL_CONFIG = '__emit.interval.ms.kstreams.outer.join.spurious.results.fix__'

interface SideParams {
  otherStore: string
  outerStore: string | undefined
  outer: boolean
  left: boolean
  /** This side's look-back and look-ahead (the left side's are the window's before/after; the right side's are swapped). */
  beforeMs: number
  afterMs: number
  windows: JoinWindows
  keySerde: Serde<unknown>
  thisValueSerde: Serde<unknown>
  trackers: Map<string, TimeTracker>
  /** (key, this side's value, other side's value) */
  joiner: (key: unknown, thisValue: unknown, otherValue: unknown) => unknown
}

/**
 * Java's KStreamKStreamJoin (4.x, with the KIP-633 fix): a record joins the other side's records
 * within its window; without a match an outer side keeps it in the shared store until the
 * window (plus grace) has closed, then emits it joined with null. Records with a null value,
 * or a null key on an inner side, are dropped (counted).
 */
function joinSide(p: SideParams): ProcessorSupplier<unknown, unknown, unknown, unknown> {
  const grace = p.windows.gracePeriodMs()
  return () => {
    let ctx!: ProcessorContext<unknown, unknown>
    let other!: WindowStore<unknown, unknown>
    let outerStore: OuterJoinStore | undefined
    let tracker!: TimeTracker
    let emitInterval = 1000

    const windowOpen = (left: boolean) => tracker.minTime + (left ? p.windows.afterMs : p.windows.beforeMs) + grace >= tracker.streamTime

    const emitNonJoined = (r: StreamRecord<unknown, unknown>) => {
      const store = outerStore!
      if (tracker.minTime + p.afterMs + grace >= tracker.streamTime) return
      const now = ctx.currentSystemTimeMs()
      if (now < tracker.nextTimeToEmit) return
      tracker.nextTimeToEmit = now + emitInterval
      tracker.minTime = Number.MAX_SAFE_INTEGER
      let leftOpen = false
      let rightOpen = false
      for (const [id, e] of store.sorted()) {
        tracker.minTime = e.timestamp
        if (leftOpen && rightOpen) break
        if (windowOpen(e.side)) {
          if (e.side) leftOpen = true
          else rightOpen = true
          continue
        }
        for (const v of e.values) {
          const thisValue = v.left === p.left ? v.value : null
          const otherValue = v.left === p.left ? null : v.value
          ctx.forward(r.withKey(e.key).withValue(p.joiner(e.key, thisValue, otherValue)).withTimestamp(e.timestamp))
        }
        store.delete(id)
      }
    }

    return {
      init: (c) => {
        ctx = c
        other = c.getStateStore(p.otherStore)
        if (p.outerStore !== undefined) outerStore = c.getStateStore<OuterJoinStore>(p.outerStore)
        const configured = c.appConfigs?.()[OUTER_JOIN_EMIT_INTERVAL_CONFIG]
        if (configured !== undefined) emitInterval = Number(configured)
        const task = c.taskId.toString()
        let t = p.trackers.get(task)
        if (t === undefined) {
          t = { streamTime: -1, minTime: Number.MAX_SAFE_INTEGER, nextTimeToEmit: 0 }
          p.trackers.set(task, t)
        }
        tracker = t
      },
      process: (r) => {
        const ts = r.timestamp
        tracker.streamTime = Math.max(tracker.streamTime, ts)
        const nullKey = r.key === null || r.key === undefined
        const nullValue = r.value === null || r.value === undefined
        // KIP-962: an outer side forwards a null-key record at once (it can never join).
        if (p.outer && nullKey && !nullValue) return ctx.forward(r.withValue(p.joiner(r.key, r.value, null)))
        if (nullKey || nullValue) return ctx.recordDropped?.()
        if (ts === tracker.streamTime && outerStore !== undefined) emitNonJoined(r)
        const from = Math.max(0, ts - p.beforeMs)
        const to = Math.max(0, ts + p.afterMs)
        const matches = other.fetch(r.key, from, to)
        let keyBytes: Buffer | undefined
        for (const m of matches) {
          if (outerStore !== undefined) {
            keyBytes ??= serializeSync(p.keySerde, r.key, true)
            outerStore.deleteIfPresent(OuterJoinStore.storeKey(keyBytes, !p.left, m.key))
          }
          ctx.forward(r.withValue(p.joiner(r.key, r.value, m.value)).withTimestamp(Math.max(ts, m.key)))
        }
        if (!p.outer || matches.length > 0) return
        if (outerStore === undefined || to < tracker.streamTime) return ctx.forward(r.withValue(p.joiner(r.key, r.value, null)))
        tracker.minTime = Math.min(tracker.minTime, ts)
        keyBytes ??= serializeSync(p.keySerde, r.key, true)
        outerStore.append(OuterJoinStore.storeKey(keyBytes, p.left, ts), r.key, p.left, ts, { left: p.left, value: r.value, bytes: serializeSync(p.thisValueSerde, r.value, false) })
      },
    }
  }
}

/** Java's KStreamJoinWindow: records pass through; keyed ones are kept in the side's window store for the other side to find. */
function joinWindow(storeName: string): ProcessorSupplier<unknown, unknown, unknown, unknown> {
  return () => {
    let ctx!: ProcessorContext<unknown, unknown>
    let store!: WindowStore<unknown, unknown>
    return {
      init: (c) => {
        ctx = c
        store = c.getStateStore(storeName)
      },
      process: (r) => {
        ctx.forward(r)
        if (r.key !== null && r.key !== undefined) store.put(r.key, r.value, r.timestamp)
      },
    }
  }
}

/**
 * Java's KStreamImplJoin#join, names and stores included: `-windowed` processors feed each
 * side's window store (retention before + after + grace, duplicates kept, changelog
 * cleanup.policy=delete), the JOINTHIS / JOINOTHER (OUTERTHIS / OUTEROTHER) processors look up
 * the other side, and a MERGE node joins both outputs. Left and outer joins share a store of
 * not-yet-joined records (`KSTREAM-OUTERSHARED-<n>-store`).
 */
export function joinStreams<K, V1, V2, VR>(leftStream: KStream<K, V1>, rightStream: KStream<K, V2>, joiner: ValueJoiner<V1, V2, VR, K>, windows: JoinWindows, joined: StreamJoined<K, V1, V2>, leftOuter: boolean, rightOuter: boolean): KStream<K, VR> {
  const builder = leftStream.builder
  const b = builder.internal
  const name = joined.name
  // A side whose key changed is repartitioned first, through `<name>-left` / `<name>-right` or `<its node>-repartition` (Java's doJoin).
  const sideFor = <V>(s: KStream<K, V>, suffix: string, valueSerde: Serde<V> | undefined): KStream<K, V> => {
    if (!s.repartitionRequired) return s
    const topic = name !== undefined ? name + suffix : s.nodeName
    const vs = valueSerde ?? s.valueSerde
    const ks = joined.keySerde ?? s.keySerde
    return new KStream<K, V>(builder, createRepartitionedSource(builder, s.nodeName, topic, ks, vs), ks, vs, false)
  }
  const left = sideFor(leftStream, '-left', joined.valueSerde)
  const right = sideFor(rightStream, '-right', joined.otherValueSerde)
  const thisSuffix = rightOuter ? '-outer-this-join' : '-this-join'
  const otherSuffix = leftOuter ? '-outer-other-join' : '-other-join'
  const suffixed = (suffix: string, prefix: string) => {
    const generated = b.newProcessorName(prefix)
    return name !== undefined ? name + suffix : generated
  }
  const thisWindowed = suffixed('-this-windowed', 'KSTREAM-WINDOWED-')
  const otherWindowed = suffixed('-other-windowed', 'KSTREAM-WINDOWED-')
  const thisGenerated = b.newProcessorName(rightOuter ? 'KSTREAM-OUTERTHIS-' : 'KSTREAM-JOINTHIS-')
  const otherGenerated = b.newProcessorName(leftOuter ? 'KSTREAM-OUTEROTHER-' : 'KSTREAM-JOINOTHER-')
  const thisName = name !== undefined ? name + thisSuffix : thisGenerated
  const otherName = name !== undefined ? name + otherSuffix : otherGenerated
  const mergeName = suffixed('-merge', 'KSTREAM-MERGE-')

  const keySerde = lazySerde(joined.keySerde ?? left.keySerde ?? right.keySerde, builder.defaults, true)
  const thisValueSerde = lazySerde(joined.valueSerde ?? left.valueSerde, builder.defaults, false)
  const otherValueSerde = lazySerde(joined.otherValueSerde ?? right.valueSerde, builder.defaults, false)
  const base = joined.storeName
  const thisStore = `${base !== undefined ? base + thisSuffix : thisGenerated}-store`
  const otherStore = `${base !== undefined ? base + otherSuffix : otherGenerated}-store`
  const retention = windows.size() + windows.gracePeriodMs()
  const windowStore = (storeName: string, valueSerde: Serde<unknown>) => {
    const sb = WindowStores.windowStoreBuilder(WindowStores.inMemoryWindowStore(storeName, retention, windows.size(), true), keySerde, valueSerde)
    // Duplicates are kept, so compaction would lose records: Java makes these changelogs delete-only.
    if (joined.loggingEnabled) sb.withLoggingEnabled({ ...joined.logConfig, 'cleanup.policy': 'delete' })
    else sb.withLoggingDisabled()
    return sb
  }
  let outerStoreName: string | undefined
  if (leftOuter) {
    const suffix = rightOuter ? '-outer-shared-join' : '-left-shared-join'
    const prefixLength = (rightOuter ? 'KSTREAM-OUTERTHIS-' : 'KSTREAM-JOINTHIS-').length
    outerStoreName = `${base !== undefined ? base + suffix : 'KSTREAM-OUTERSHARED-' + thisGenerated.substring(prefixLength)}-store`
  }

  const t = b.topology
  t.addProcessor(thisWindowed, joinWindow(thisStore), [left.nodeName])
  t.addProcessor(otherWindowed, joinWindow(otherStore), [right.nodeName])
  const trackers = new Map<string, TimeTracker>()
  const common = { outerStore: outerStoreName, windows, keySerde, trackers }
  t.addProcessor(thisName, joinSide({ ...common, otherStore, outer: leftOuter, left: true, beforeMs: windows.beforeMs, afterMs: windows.afterMs, thisValueSerde, joiner: (k, a, o) => joiner(a as V1, o as V2, k as K) }), [thisWindowed])
  t.addProcessor(otherName, joinSide({ ...common, otherStore: thisStore, outer: rightOuter, left: false, beforeMs: windows.afterMs, afterMs: windows.beforeMs, thisValueSerde: otherValueSerde, joiner: (k, a, o) => joiner(o as V1, a as V2, k as K) }), [otherWindowed])
  t.addProcessor(mergeName, ops.passThrough(), [thisName, otherName])
  t.addStateStore(windowStore(thisStore, thisValueSerde), [thisWindowed, otherName])
  t.addStateStore(windowStore(otherStore, otherValueSerde), [otherWindowed, thisName])
  if (outerStoreName !== undefined) t.addStateStore(new OuterJoinStoreBuilder(outerStoreName, joined.loggingEnabled, joined.logConfig), [thisName, otherName])
  return new KStream<K, VR>(builder, mergeName, joined.keySerde, undefined, false)
}
