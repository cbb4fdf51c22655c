import type { Processor, ProcessorContext, ProcessorSupplier } from '../processor.js'
import type { Record } from '../record.js'
import type { KeyValueStore, ValueAndTimestamp } from '../store.js'

/** A KTable update (Java's Change): the new value, and the old one when a downstream needs it. */
export interface Change<V> {
  newValue: V | null
  oldValue: V | null
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
  tableFilter: <K, V>(pred: (k: K, v: V) => boolean, not: boolean, store: string | undefined) =>
    tableOp<K, V, V>((k, v) => (pred(k, v) !== not ? v : null), store),
  tableMapValues: <K, V, VR>(fn: (v: V, k: K) => VR, store: string | undefined) =>
    tableOp<K, V, VR>((k, v) => fn(v, k), store),
}

/** KTableFilter / KTableMapValues: a null value stays null (a delete), and is forwarded as one. */
function tableOp<K, V, VR>(compute: (k: K, v: V) => VR | null, storeName: string | undefined): ProcessorSupplier<K, Change<V>, K, Change<VR>> {
  return () => {
    let ctx!: ProcessorContext<K, Change<VR>>
    let store: KeyValueStore<K, ValueAndTimestamp<VR>> | undefined
    return {
      init: (c) => {
        ctx = c
        if (storeName !== undefined) store = c.getStateStore<NonNullable<typeof store>>(storeName)
      },
      process: (r) => {
        const newValue = r.value.newValue === null ? null : compute(r.key, r.value.newValue)
        if (store) store.put(r.key, newValue === null ? null : { value: newValue, timestamp: r.timestamp })
        ctx.forward(r.withValue({ newValue, oldValue: null }))
      },
    }
  }
}

/**
 * Java's KStreamAggregate (count and aggregate) and KStreamReduce: records with a null key or
 * value are dropped; the result keeps the largest timestamp seen for the key.
 */
export function aggregateProcessor<K, V, A>(storeName: string, init: (() => A) | undefined, agg: (k: K, v: V, acc: A) => A): ProcessorSupplier<K, V, K, Change<A>> {
  return () => {
    let ctx!: ProcessorContext<K, Change<A>>
    let store!: KeyValueStore<K, ValueAndTimestamp<A>>
    return {
      init: (c) => {
        ctx = c
        store = c.getStateStore(storeName)
      },
      process: (r) => {
        if (r.key === null || r.key === undefined || r.value === null || r.value === undefined) return
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
        store.put(r.key, { value: next, timestamp: ts })
        ctx.forward(r.withValue({ newValue: next, oldValue: null }).withTimestamp(ts))
      },
    }
  }
}

/** Java's KTableSource: drops null keys; stores the update when the table is materialized. */
export function tableSourceProcessor<K, V>(storeName: string | undefined): ProcessorSupplier<K, V, K, Change<V>> {
  return () => {
    let ctx!: ProcessorContext<K, Change<V>>
    let store: KeyValueStore<K, ValueAndTimestamp<V>> | undefined
    return {
      init: (c) => {
        ctx = c
        if (storeName !== undefined) store = c.getStateStore<NonNullable<typeof store>>(storeName)
      },
      process: (r) => {
        if (r.key === null || r.key === undefined) return
        if (store) store.put(r.key, r.value === null ? null : { value: r.value, timestamp: r.timestamp })
        ctx.forward(r.withValue({ newValue: r.value, oldValue: null }))
      },
    } satisfies Processor<K, V, K, Change<V>>
  }
}
