import type { Processor, ProcessorContext, ProcessorSupplier } from '../processor.js'
import { Record } from '../record.js'
import { StreamsException } from '../errors.js'
import type { KeyValueStore, MeteredKeyValueStore, ValueAndTimestamp } from '../store.js'
import { PUT_RETURN_CODE_IS_LATEST, PUT_RETURN_CODE_NOT_PUT, tableStore, type TableStore } from '../state/versioned.js'

/** A KTable update (Java's Change): the new value, and the old one when a downstream needs it. */
export interface Change<V> {
  newValue: V | null
  oldValue: V | null
  /** False for an out-of-order update of a versioned table (KIP-914): not the key's latest version. Absent means latest. */
  isLatest?: boolean
}

/**
 * Whether a KTable processor forwards old values too. Set after the processor is wired, when a
 * downstream operation needs them (KTable.groupBy), as Java's enableSendingOldValues; read when
 * records flow, so the same supplier serves both.
 */
export interface OldValues {
  enabled: boolean
}

export interface KeyValuePair<K, V> {
  key: K
  value: V
}

/** The DSL's stateless operators, one supplier each, as Java's KStreamFilter, KStreamMap, ... */
function stateless<K, V, KO, VO>(fn: (record: Record<K, V>, ctx: ProcessorContext<KO, VO>) => void): ProcessorSupplier<K, V, KO, VO> {
  return () => {
    let ctx!: ProcessorContext<KO, VO>
    return {
      init: (c) => { ctx = c },
      process: (r) => fn(r, ctx),
    }
  }
}

export const ops = {
  filter: <K, V>(pred: (k: K, v: V) => boolean, not: boolean) =>
    stateless<K, V, K, V>((r, c) => { if (pred(r.key, r.value) !== not) c.forward(r) }),
  map: <K, V, KR, VR>(fn: (k: K, v: V) => KeyValuePair<KR, VR>) =>
    stateless<K, V, KR, VR>((r, c) => {
      const kv = fn(r.key, r.value)
      c.forward(r.withKey(kv.key).withValue(kv.value))
    }),
  mapValues: <K, V, VR>(fn: (v: V, k: K) => VR) =>
    stateless<K, V, K, VR>((r, c) => c.forward(r.withValue(fn(r.value, r.key)))),
  flatMap: <K, V, KR, VR>(fn: (k: K, v: V) => Iterable<KeyValuePair<KR, VR>>) =>
    stateless<K, V, KR, VR>((r, c) => { for (const kv of fn(r.key, r.value)) c.forward(r.withKey(kv.key).withValue(kv.value)) }),
  flatMapValues: <K, V, VR>(fn: (v: V, k: K) => Iterable<VR>) =>
    stateless<K, V, K, VR>((r, c) => { for (const v of fn(r.value, r.key)) c.forward(r.withValue(v)) }),
  peek: <K, V>(fn: (k: K, v: V) => void) =>
    stateless<K, V, K, V>((r, c) => { fn(r.key, r.value); c.forward(r) }),
  foreach: <K, V>(fn: (k: K, v: V) => void) =>
    stateless<K, V, never, never>((r) => fn(r.key, r.value)),
  selectKey: <K, V, KR>(fn: (k: K, v: V) => KR) =>
    stateless<K, V, KR, V>((r, c) => c.forward(r.withKey(fn(r.key, r.value)))),
  passThrough: <K, V>() => stateless<K, V, K, V>((r, c) => c.forward(r)),
  /** Java's KStreamBranch: the first matching predicate wins; unmatched records go to the default branch if any. */
  branch: <K, V>(predicates: ((k: K, v: V) => boolean)[], children: string[]) =>
    stateless<K, V, K, V>((r, c) => {
      for (let i = 0; i < predicates.length; i++) {
        if (predicates[i]!(r.key, r.value)) {
          c.forward(r, children[i])
          return
        }
      }
      if (children.length > predicates.length) c.forward(r, children[predicates.length])
    }),
  toStream: <K, V>() => stateless<K, Change<V>, K, V | null>((r, c) => c.forward(r.withValue(r.value.newValue))),
  tableFilter: <K, V>(pred: (k: K, v: V) => boolean, not: boolean, store: string | undefined, old: OldValues) =>
    tableOp<K, V, V>((k, v) => (pred(k, v) !== not ? v : null), store, old, true),
  tableMapValues: <K, V, VR>(fn: (v: V, k: K) => VR, store: string | undefined, old: OldValues) =>
    tableOp<K, V, VR>((k, v) => fn(v, k), store, old, false),
  /**
   * Java's KTableRepartitionMap: the old pair (subtract) then the new one (add), or one record
   * carrying both when the selected key did not change.
   */
  tableSelect: <K, V, KR, VR>(fn: (k: K, v: V) => KeyValuePair<KR, VR>) =>
    stateless<K, Change<V>, KR, Change<VR>>((r, c) => {
      if (r.key === null || r.key === undefined) throw new StreamsException('Record key for the grouping KTable should not be null.')
      // Java's KTableRepartitionMap: an aggregate of a versioned table takes latest-by-timestamp updates only (KIP-914).
      if (r.value.isLatest === false) return
      const nv = r.value.newValue === null ? null : fn(r.key, r.value.newValue)
      const ov = r.value.oldValue === null ? null : fn(r.key, r.value.oldValue)
      const oldOk = ov !== null && ov.key !== null && ov.key !== undefined && ov.value !== null && ov.value !== undefined
      const newOk = nv !== null && nv.key !== null && nv.key !== undefined && nv.value !== null && nv.value !== undefined
      if (oldOk && newOk && ov.key === nv.key) {
        c.forward(r.withKey(ov.key).withValue({ newValue: nv.value, oldValue: ov.value }))
        return
      }
      if (oldOk) c.forward(r.withKey(ov.key).withValue({ newValue: null, oldValue: ov.value }))
      if (newOk) c.forward(r.withKey(nv.key).withValue({ newValue: nv.value, oldValue: null }))
    }),
}

/** A Change, marked only when it is not the latest version (so the usual update stays `{ newValue, oldValue }`). */
function change<V>(newValue: V | null, oldValue: V | null, isLatest: boolean): Change<V> {
  return isLatest ? { newValue, oldValue } : { newValue, oldValue, isLatest: false }
}

/**
 * KTableFilter / KTableMapValues: a null value stays null (a delete), and is forwarded as one,
 * except that a filter sending old values drops an update that is null on both sides.
 */
function tableOp<K, V, VR>(compute: (k: K, v: V) => VR | null, storeName: string | undefined, oldValues: OldValues, isFilter: boolean): ProcessorSupplier<K, Change<V>, K, Change<VR>> {
  return () => {
    let ctx!: ProcessorContext<K, Change<VR>>
    let store: TableStore<K, VR> | undefined
    return {
      init: (c) => {
        ctx = c
        if (storeName !== undefined) store = tableStore(c.getStateStore(storeName))
      },
      process: (r) => {
        const newValue = r.value.newValue === null ? null : compute(r.key, r.value.newValue)
        // A materialized filter / mapValues has its previous output in its own store (Java's computeOldValue).
        const oldValue = !oldValues.enabled ? null : store ? (store.get(r.key)?.value ?? null) : r.value.oldValue === null ? null : compute(r.key, r.value.oldValue)
        if (isFilter && oldValues.enabled && newValue === null && oldValue === null && store?.versioned !== true) return
        if (store) {
          const code = store.put(r.key, newValue, r.timestamp)
          if (code !== PUT_RETURN_CODE_NOT_PUT) ctx.forward(r.withValue(change(newValue, oldValue, code === PUT_RETURN_CODE_IS_LATEST)))
        } else ctx.forward(r.withValue(change(newValue, oldValue, r.value.isLatest !== false)))
      },
    }
  }
}

/**
 * Java's KStreamAggregate (count and aggregate) and KStreamReduce: records with a null key or
 * value are dropped; the result keeps the largest timestamp seen for the key.
 */
export function aggregateProcessor<K, V, A>(storeName: string, init: (() => A) | undefined, agg: (k: K, v: V, acc: A) => A, oldValues: OldValues): ProcessorSupplier<K, V, K, Change<A>> {
  return () => {
    let ctx!: ProcessorContext<K, Change<A>>
    let store!: TableStore<K, A>
    let cached = false
    return {
      init: (c) => {
        ctx = c
        const raw = c.getStateStore<KeyValueStore<K, ValueAndTimestamp<A>>>(storeName)
        store = tableStore(raw)
        cached = forwardOnFlush(raw, ctx, oldValues)
      },
      process: (r) => {
        // Java's KStreamAggregate counts these in dropped-records.
        if (r.key === null || r.key === undefined || r.value === null || r.value === undefined) return ctx.recordDropped?.()
        const old = store.get(r.key)
        let next: A
        let ts: number
        if (old === undefined) {
          next = init === undefined ? (r.value as unknown as A) : agg(r.key, r.value, init())
          ts = r.timestamp
        } else {
          next = agg(r.key, r.value, old.value)
          ts = Math.max(r.timestamp, old.timestamp)
        }
        // A versioned store (KIP-914) may refuse the write: then nothing is forwarded either.
        const code = store.put(r.key, next, ts)
        if (!cached && code !== PUT_RETURN_CODE_NOT_PUT) ctx.forward(r.withValue(change(next, oldValues.enabled && old !== undefined ? old.value : null, code === PUT_RETURN_CODE_IS_LATEST)).withTimestamp(ts))
      },
    }
  }
}

/**
 * Java's KTableSource: drops null keys; stores the update when the table is materialized
 * (`source.storeName`, set later when a downstream operation needs old values).
 */
export function tableSourceProcessor<K, V>(source: { storeName: string | undefined }, oldValues: OldValues): ProcessorSupplier<K, V, K, Change<V>> {
  return () => {
    let ctx!: ProcessorContext<K, Change<V>>
    let store: TableStore<K, V> | undefined
    let cached = false
    return {
      init: (c) => {
        ctx = c
        if (source.storeName === undefined) return
        const raw = c.getStateStore<KeyValueStore<K, ValueAndTimestamp<V>>>(source.storeName)
        store = tableStore(raw)
        // A cached source store forwards at flush, so a tombstone for an absent key is never forwarded (CachingKeyValueStore).
        cached = forwardOnFlush(raw, ctx, oldValues)
      },
      process: (r) => {
        if (r.key === null || r.key === undefined) return
        const old = oldValues.enabled && store ? (store.get(r.key)?.value ?? null) : null
        if (!store) return ctx.forward(r.withValue({ newValue: r.value, oldValue: old }))
        // A versioned store refuses a record older than its history retention: it is not forwarded either (KIP-914).
        const code = store.put(r.key, r.value ?? null, r.timestamp)
        if (!cached && code !== PUT_RETURN_CODE_NOT_PUT) ctx.forward(r.withValue(change(r.value, old, code === PUT_RETURN_CODE_IS_LATEST)))
      },
    } satisfies Processor<K, V, K, Change<V>>
  }
}

/**
 * Java's KTableAggregate (count and aggregate of a KGroupedTable) and KTableReduce: the old
 * value is subtracted, then the new one added; the aggregate keeps the largest timestamp.
 * `init` undefined is reduce: the first value is the aggregate.
 */
export function tableAggregateProcessor<K, V, A>(storeName: string, init: (() => A) | undefined, add: (k: K, v: V, acc: A) => A, remove: (k: K, v: V, acc: A) => A, oldValues: OldValues): ProcessorSupplier<K, Change<V>, K, Change<A>> {
  return () => {
    let ctx!: ProcessorContext<K, Change<A>>
    let store!: TableStore<K, A>
    let cached = false
    return {
      init: (c) => {
        ctx = c
        const raw = c.getStateStore<KeyValueStore<K, ValueAndTimestamp<A>>>(storeName)
        store = tableStore(raw)
        cached = forwardOnFlush(raw, ctx, oldValues)
      },
      process: (r) => {
        if (r.key === null || r.key === undefined) throw new StreamsException(`Record key for KTable aggregate operator with state ${storeName} should not be null.`)
        const old = store.get(r.key)
        const oldAgg = old === undefined ? null : old.value
        let ts = r.timestamp
        let mid: A | null = oldAgg
        if (r.value.oldValue !== null && oldAgg !== null) {
          mid = remove(r.key, r.value.oldValue, oldAgg)
          ts = Math.max(r.timestamp, old!.timestamp)
        }
        let next: A | null = mid
        if (r.value.newValue !== null) {
          next = mid === null ? (init === undefined ? (r.value.newValue as unknown as A) : add(r.key, r.value.newValue, init())) : add(r.key, r.value.newValue, mid)
          if (old !== undefined) ts = Math.max(r.timestamp, old.timestamp)
        }
        const code = store.put(r.key, next, ts)
        if (!cached && code !== PUT_RETURN_CODE_NOT_PUT) ctx.forward(r.withValue(change(next, oldValues.enabled ? oldAgg : null, code === PUT_RETURN_CODE_IS_LATEST)).withTimestamp(ts))
      },
    }
  }
}

/**
 * Java's TimestampedTupleForwarder + TimestampedCacheFlushListener: with a record cache, the
 * store forwards each update when it leaves the cache (timestamp: the new value's, else the
 * write's), and the processor forwards nothing itself. Returns whether the store caches.
 */
function forwardOnFlush<K, A>(store: KeyValueStore<K, ValueAndTimestamp<A>> | unknown, ctx: ProcessorContext<K, Change<A>>, oldValues: OldValues): boolean {
  const s = store as Partial<MeteredKeyValueStore<K, ValueAndTimestamp<A>>>
  if (typeof s.setFlushListener !== 'function') return false
  return s.setFlushListener((key, nv, ov, rc) => {
    ctx.forward(new Record<K, Change<A>>(key, { newValue: nv === null ? null : nv.value, oldValue: ov === null ? null : ov.value } as Change<A>, nv === null ? rc.timestamp : nv.timestamp, rc.headers))
  }, () => oldValues.enabled)
}
