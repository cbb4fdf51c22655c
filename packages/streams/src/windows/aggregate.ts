import type { ProcessorContext, ProcessorSupplier } from '../processor.js'
import { Record as RecordOf, type Record } from '../record.js'
import type { CacheRecordContext } from '../state/cache.js'
import type { CachedWindowedStore } from '../state/caching-windows.js'
import type { ValueAndTimestamp } from '../store.js'
import type { Change, OldValues } from '../dsl/processors.js'
import { FinalEmitter, type EmitStrategy } from './emit-strategy.js'
import type { SessionStore } from './session-store.js'
import type { WindowStore } from './window-store.js'
import { Window, Windowed, type SessionWindows, type SlidingWindows, type TimeWindows } from './windows.js'

export type Initializer<A> = () => A
export type Aggregator<K, V, A> = (key: K, value: V, aggregate: A) => A
export type Merger<K, A> = (key: K, aggregate1: A, aggregate2: A) => A

type WindowedOut<K, A> = ProcessorContext<Windowed<K>, Change<A>>

/** Java's dropped-records sensor: null keys, and records for windows already closed. */
function dropped(ctx: ProcessorContext<any, any>): void {
  ctx.recordDropped?.()
}

const onClose = (emit: EmitStrategy | undefined) => emit?.type() === 'ON_WINDOW_CLOSE'

/** Forwards closed windows (timestamped values) as final results, with the triggering record's headers. */
function forwardFinal<K, A>(ctx: WindowedOut<K, A>, r: Record<K, unknown>, closed: { key: Windowed<K>; value: ValueAndTimestamp<A> }[]): void {
  for (const e of closed) ctx.forward(r.withKey(e.key).withValue({ newValue: e.value.value, oldValue: null }).withTimestamp(e.value.timestamp))
}

/**
 * Java's TimestampedTupleForwarder (time and sliding windows) and SessionTupleForwarder: with a
 * cached store, updates are forwarded when they leave the cache, stamped with the value's
 * timestamp (sessions: the window end), and the processor forwards nothing itself. Emit-on-close
 * aggregations forward only final results, so they take no listener. Returns whether it caches.
 */
function forwardOnFlush<K, S, A>(store: object, ctx: WindowedOut<K, A>, old: OldValues, stamp: (key: Windowed<K>, value: S | null, context: CacheRecordContext) => { value: A | null; timestamp: number }): boolean {
  const s = store as Partial<CachedWindowedStore<K, S>>
  if (typeof s.setFlushListener !== 'function') return false
  return s.setFlushListener((key, nv, ov, rc) => {
    const n = stamp(key, nv, rc)
    const o = ov === null ? null : stamp(key, ov, rc).value
    ctx.forward(new RecordOf<Windowed<K>, Change<A>>(key, { newValue: n.value, oldValue: o }, n.timestamp, rc.headers))
  }, () => old.enabled)
}

/** Timestamped window values: the value's own timestamp, else the write's. */
const timestamped = <K, A>(_k: Windowed<K>, v: ValueAndTimestamp<A> | null, rc: CacheRecordContext) => (v === null ? { value: null, timestamp: rc.timestamp } : { value: v.value, timestamp: v.timestamp })

const sameStarts = (a: Window[], b: Window[]) => a.length === b.length && a.every((w, i) => w.equals(b[i]!))

/**
 * Java's KStreamWindowAggregate (emit on every update): each window containing the record whose
 * end is after `streamTime - grace` is updated and forwarded; for the others the record is
 * late and dropped (counted).
 */
export function timeWindowAggregate<K, V, A>(storeName: string, windows: TimeWindows, init: Initializer<A>, agg: Aggregator<K, V, A>, old: OldValues, emit?: EmitStrategy): ProcessorSupplier<K, V, Windowed<K>, Change<A>> {
  const final = onClose(emit)
  return () => {
    let ctx!: WindowedOut<K, A>
    let store!: WindowStore<K, ValueAndTimestamp<A>>
    let emitter!: FinalEmitter
    let streamTime = -1
    // Java's KStreamWindowAggregate emitRangeLowerBound / UpperBound / shouldRangeFetch (end exclusive).
    const emitFinal = (r: Record<K, V>, closeTime: number) => {
      if (!emitter.shouldEmit(closeTime)) return
      const upper = closeTime - windows.size()
      if (upper < 0) return
      const last = emitter.lastCloseTime
      const lower = last === -1 ? 0 : Math.max(0, last - windows.size()) + 1
      if (last !== -1 && sameStarts(windows.windowsFor(upper), windows.windowsFor(lower - 1))) return
      forwardFinal(ctx, r, store.fetchAll(lower, upper))
      emitter.lastCloseTime = closeTime
    }
    let cached = false
    return {
      init: (c) => {
        ctx = c
        store = c.getStateStore(storeName)
        emitter = new FinalEmitter(c, storeName)
        if (!final) cached = forwardOnFlush(store, ctx, old, timestamped<K, A>)
      },
      process: (r: Record<K, V>) => {
        if (r.key === null || r.key === undefined) return dropped(ctx)
        streamTime = Math.max(streamTime, r.timestamp)
        const closeTime = streamTime - windows.gracePeriodMs()
        let late = false
        for (const w of windows.windowsFor(r.timestamp)) {
          if (w.end <= closeTime) {
            late = true
            continue
          }
          const prev = store.fetch(r.key, w.start)
          const oldAgg = prev === undefined || prev === null ? init() : prev.value
          const ts = prev === undefined || prev === null ? r.timestamp : Math.max(r.timestamp, prev.timestamp)
          const next = agg(r.key, r.value, oldAgg)
          store.put(r.key, { value: next, timestamp: ts }, w.start)
          if (!final && !cached) ctx.forward(r.withKey(new Windowed(r.key, w)).withValue({ newValue: next, oldValue: old.enabled ? oldAgg : null }).withTimestamp(ts))
        }
        // Java records one drop per expired window the record fell into.
        if (late) for (const w of windows.windowsFor(r.timestamp)) if (w.end <= closeTime) dropped(ctx)
        if (final) emitFinal(r, closeTime)
      },
    }
  }
}

/**
 * Java's KStreamSlidingWindowAggregate (KIP-450), over a store read backwards as Java's default
 * (RocksDB) stores allow: each record has a left window [t - d, t] and, when a later record is
 * within d, a right window [t + 1, t + 1 + d]; windows only exist where they hold records.
 */
export function slidingWindowAggregate<K, V, A>(storeName: string, windows: SlidingWindows, init: Initializer<A>, agg: Aggregator<K, V, A>, old: OldValues, emit?: EmitStrategy): ProcessorSupplier<K, V, Windowed<K>, Change<A>> {
  const d = windows.timeDifferenceMs
  const final = onClose(emit)
  return () => {
    let ctx!: WindowedOut<K, A>
    let store!: WindowStore<K, ValueAndTimestamp<A>>
    let emitter!: FinalEmitter
    let streamTime = -1
    // Java's KStreamSlidingWindowAggregate bounds: both ends inclusive, so a window closes once its end is before closeTime.
    const emitFinal = (r: Record<K, V>, closeTime: number) => {
      if (!emitter.shouldEmit(closeTime)) return
      const upper = closeTime - d - 1
      if (upper < 0) return
      const last = emitter.lastCloseTime
      forwardFinal(ctx, r, store.fetchAll(last === -1 ? 0 : Math.max(0, last - d), upper))
      emitter.lastCloseTime = closeTime
    }
    let cached = false
    const forward = (r: Record<K, V>, w: Window, newValue: A, oldValue: A | null, ts: number) => {
      if (!final && !cached) ctx.forward(r.withKey(new Windowed(r.key, w)).withValue({ newValue, oldValue }).withTimestamp(ts))
    }

    const update = (w: Window, vt: ValueAndTimestamp<A> | null, r: Record<K, V>, closeTime: number) => {
      if (w.end < closeTime) return dropped(ctx)
      const oldAgg = vt === null ? null : vt.value
      const next = agg(r.key, r.value, (oldAgg ?? init()) as A)
      const ts = oldAgg === null ? r.timestamp : Math.max(r.timestamp, vt!.timestamp)
      store.put(r.key, { value: next, timestamp: ts }, w.start)
      forward(r, w, next, old.enabled ? oldAgg : null, ts)
    }
    const createRight = (t: number, rightAgg: ValueAndTimestamp<A>, r: Record<K, V>) => {
      const w = new Window(t + 1, t + 1 + d)
      store.put(r.key, rightAgg, w.start)
      forward(r, w, rightAgg.value, null, rightAgg.timestamp)
    }
    const createPreviousRight = (start: number, r: Record<K, V>, closeTime: number) =>
      update(new Window(start, start + d), { value: init(), timestamp: r.timestamp }, r, closeTime)

    const createWindows = (r: Record<K, V>, closeTime: number, starts: Set<number>, rightAgg: ValueAndTimestamp<A> | null, leftAgg: ValueAndTimestamp<A> | null, leftCreated: boolean, rightCreated: boolean, prevTs: number | null) => {
      const t = r.timestamp
      if (prevTs !== null) {
        const prevRight = prevTs + 1
        if (!starts.has(prevRight) && prevRight + d >= t) createPreviousRight(prevRight, r, closeTime)
      }
      if (!leftCreated) {
        const vt = prevTs !== null && t - d <= prevTs ? { value: leftAgg!.value, timestamp: t } : { value: init(), timestamp: t }
        update(new Window(t - d, t), vt, r, closeTime)
      }
      if (!rightCreated && rightAgg !== null && rightAgg.timestamp > t) createRight(t, rightAgg, r)
    }

    const processEarly = (r: Record<K, V>, closeTime: number) => {
      const t = r.timestamp
      let combined: { w: Window; vt: ValueAndTimestamp<A> } | undefined
      let rightAgg: ValueAndTimestamp<A> | null = null
      let rightCreated = false
      const starts = new Set<number>()
      let prevTs: number | null = null
      for (const e of store.fetch(r.key, r.key, 0, t + 1)) {
        const start = e.key.window.start
        starts.add(start)
        if (start === 0) {
          combined = { w: new Window(0, d), vt: e.value }
          if (e.value.timestamp < t) prevTs = e.value.timestamp
        } else if (start <= t) {
          rightAgg = e.value
          update(new Window(start, start + d), e.value, r, closeTime)
        } else if (start === t + 1) {
          rightCreated = true
        }
      }
      if (rightAgg === null && combined !== undefined && combined.vt.timestamp > t) rightAgg = combined.vt
      if (!rightCreated && rightAgg !== null && rightAgg.timestamp > t) createRight(t, rightAgg, r)
      if (prevTs !== null && !starts.has(prevTs + 1)) createPreviousRight(prevTs + 1, r, closeTime)
      if (combined === undefined) update(new Window(0, d), { value: init(), timestamp: t }, r, closeTime)
      else update(combined.w, combined.vt, r, closeTime)
    }

    const processReverse = (r: Record<K, V>, closeTime: number) => {
      const t = r.timestamp
      const starts = new Set<number>()
      let leftAgg: ValueAndTimestamp<A> | null = null
      let rightAgg: ValueAndTimestamp<A> | null = null
      let leftCreated = false
      let rightCreated = false
      let prevTs: number | null = null
      for (const e of store.backwardFetch(r.key, r.key, Math.max(0, t - 2 * d), t + 1)) {
        const start = e.key.window.start
        starts.add(start)
        const end = start + d
        const maxTs = e.value.timestamp
        if (start === t + 1) {
          rightCreated = true
        } else if (end > t) {
          if (rightAgg === null) rightAgg = e.value
          update(new Window(start, end), e.value, r, closeTime)
        } else if (end === t) {
          leftCreated = true
          update(new Window(start, end), e.value, r, closeTime)
          if (maxTs < t) prevTs = maxTs
          else return
        } else {
          leftAgg = e.value
          prevTs = maxTs
          break
        }
      }
      createWindows(r, closeTime, starts, rightAgg, leftAgg, leftCreated, rightCreated, prevTs)
    }

    return {
      init: (c) => {
        ctx = c
        store = c.getStateStore(storeName)
        emitter = new FinalEmitter(c, storeName)
        if (!final) cached = forwardOnFlush(store, ctx, old, timestamped<K, A>)
      },
      process: (r: Record<K, V>) => {
        if (r.key === null || r.key === undefined || r.value === null || r.value === undefined) return dropped(ctx)
        streamTime = Math.max(streamTime, r.timestamp)
        const closeTime = streamTime - windows.gracePeriodMs()
        if (r.timestamp + d < closeTime) return dropped(ctx)
        // As Java: a late record, or one in the first window (processEarly), triggers no final emission.
        if (r.timestamp < d) return processEarly(r, closeTime)
        processReverse(r, closeTime)
        if (final) emitFinal(r, closeTime)
      },
    }
  }
}

/**
 * Java's KStreamSessionWindowAggregate: the record's session [t, t] absorbs every session of the
 * key within the inactivity gap; merged sessions are removed (a tombstone is forwarded for
 * each), the merged one is stored and forwarded with its end as timestamp.
 */
export function sessionWindowAggregate<K, V, A>(storeName: string, windows: SessionWindows, init: Initializer<A>, agg: Aggregator<K, V, A>, merger: Merger<K, A>, old: OldValues, emit?: EmitStrategy): ProcessorSupplier<K, V, Windowed<K>, Change<A>> {
  const final = onClose(emit)
  return () => {
    let ctx!: WindowedOut<K, A>
    let store!: SessionStore<K, A>
    let emitter!: FinalEmitter
    let streamTime = -1
    let cached = false
    const forward = (r: Record<K, V>, key: Windowed<K>, oldAgg: A | null, newAgg: A | null) => {
      if (!final && !cached) ctx.forward(r.withKey(key).withValue({ newValue: newAgg, oldValue: old.enabled ? oldAgg : null }).withTimestamp(key.window.end))
    }
    // Java's KStreamSessionWindowAggregate: sessions whose end is in [lastCloseTime, closeTime - 1].
    const emitFinal = (r: Record<K, V>, closeTime: number) => {
      if (!emitter.shouldEmit(closeTime)) return
      const upper = closeTime - 1
      if (upper < 0) return
      const lower = Math.max(0, emitter.lastCloseTime)
      if (upper < lower) return
      forwardFinal(ctx, r, store.findSessions(lower, upper).map((e) => ({ key: e.key, value: { value: e.value, timestamp: e.key.window.end } })))
      emitter.lastCloseTime = closeTime
    }
    return {
      init: (c) => {
        ctx = c
        store = c.getStateStore(storeName)
        emitter = new FinalEmitter(c, storeName)
        if (!final) cached = forwardOnFlush(store, ctx, old, (key: Windowed<K>, value: A | null) => ({ value, timestamp: key.window.end }))
      },
      process: (r: Record<K, V>) => {
        if (r.key === null || r.key === undefined) return dropped(ctx)
        const t = r.timestamp
        streamTime = Math.max(streamTime, t)
        const closeTime = streamTime - windows.gracePeriodMs() - windows.inactivityGap()
        const merged = store.findSessions(r.key, t - windows.inactivityGap(), t + windows.inactivityGap())
        let acc = init()
        let start = t
        let end = t
        for (const s of merged) {
          acc = merger(r.key, acc, s.value)
          start = Math.min(start, s.key.window.start)
          end = Math.max(end, s.key.window.end)
        }
        if (end < closeTime) dropped(ctx)
        else {
          if (start !== t || end !== t) {
            for (const s of merged) {
              store.remove(s.key)
              forward(r, s.key, s.value, null)
            }
          }
          acc = agg(r.key, r.value, acc)
          const key = new Windowed(r.key, new Window(start, end))
          store.put(key, acc)
          forward(r, key, null, acc)
        }
        if (final) emitFinal(r, closeTime)
      },
    }
  }
}
