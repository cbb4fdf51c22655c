import type { Serde } from '@tidelog/client'
import type { ProcessorContext, ProcessorSupplier } from '../processor.js'
import type { Record } from '../record.js'
import type { ValueAndTimestamp } from '../store.js'
import { tableStore, type TableStore } from '../state/versioned.js'
import { KTable } from './ktable.js'
import { Materialized, Named } from './options.js'
import type { Change, OldValues } from './processors.js'
import type { StreamsBuilder } from './streams-builder.js'

/** Reads a table's current value for a key (Java's KTableValueGetter), bound to one task; `asOf` when the table is versioned (KIP-914). */
export type ValueGetter<K, V> = ((key: K) => ValueAndTimestamp<V> | undefined) & { asOf?: (key: K, timestamp: number) => ValueAndTimestamp<V> | undefined }

/**
 * How a downstream operator reads a table (Java's KTableValueGetterSupplier): the stores it needs
 * connected (asking for them may materialize a source table, as Java's valueGetterSupplier()
 * does) and a getter built per task from its processor context.
 */
export interface ValueGetterSupplier<K, V> {
  storeNames(): string[]
  get(ctx: ProcessorContext<any, any>): ValueGetter<K, V>
}

/**
 * A processor whose per-task state (stores, value getters) is set up once at init: `setup` runs
 * with the task's context, `process` gets each record with that context and state.
 */
export function contextual<KIn, VIn, KOut, VOut, T>(setup: (ctx: ProcessorContext<KOut, VOut>) => T, process: (record: Record<KIn, VIn>, ctx: ProcessorContext<KOut, VOut>, state: T) => void): ProcessorSupplier<KIn, VIn, KOut, VOut> {
  return () => {
    let ctx!: ProcessorContext<KOut, VOut>
    let state!: T
    return {
      init: (c) => {
        ctx = c
        state = setup(c)
      },
      process: (r) => process(r, ctx, state),
    }
  }
}

/** Java's UNKNOWN timestamp: a missing side does not raise the result's timestamp. */
const UNKNOWN = -1

/** A materialized table's getter: its own timestamped store. */
export function storeGetter<K, V>(storeName: () => string): ValueGetterSupplier<K, V> {
  return {
    storeNames: () => [storeName()],
    get: (ctx) => {
      const store = tableStore<K, V>(ctx.getStateStore(storeName()))
      const get: ValueGetter<K, V> = (key) => store.get(key)
      if (store.versioned) get.asOf = (key, ts) => store.getAsOf(key, ts)
      return get
    },
  }
}

/** An unmaterialized filter / mapValues: the parent's value, recomputed (Java's KTableFilterValueGetter, KTableMapValuesValueGetter). */
export function computedGetter<K, V, VR>(parent: () => ValueGetterSupplier<K, V>, compute: (key: K, value: V) => VR | null): ValueGetterSupplier<K, VR> {
  return {
    storeNames: () => parent().storeNames(),
    get: (ctx) => {
      const get = parent().get(ctx)
      const map = (key: K, v: ValueAndTimestamp<V> | undefined): ValueAndTimestamp<VR> | undefined => {
        if (v === undefined) return undefined
        const out = compute(key, v.value)
        return out === null || out === undefined ? undefined : { value: out, timestamp: v.timestamp }
      }
      const out: ValueGetter<K, VR> = (key) => map(key, get(key))
      const asOf = get.asOf
      if (asOf !== undefined) out.asOf = (key, ts) => map(key, asOf(key, ts))
      return out
    },
  }
}

export type TableJoinKind = 'inner' | 'left' | 'outer'
type Joiner<V1, V2, VR> = (left: V1 | null, right: V2 | null) => VR

/**
 * One side of a table-table join (Java's KTableKTableInnerJoin / LeftJoin / RightJoin /
 * OuterJoin processors): an update on this side is joined with the other side's current value.
 * `mode` is this side's rule; the other side of a left join is Java's RightJoin, with the joiner
 * reversed. Old values are joined only when downstream asked for them (`old`).
 */
type SideMode = 'inner' | 'left' | 'right' | 'outer'

function joinSide<K, V1, V2, VR>(mode: SideMode, other: ValueGetterSupplier<K, V2>, joiner: (v1: V1 | null, v2: V2 | null) => VR, old: OldValues): ProcessorSupplier<K, Change<V1>, K, Change<VR>> {
  return contextual<K, Change<V1>, K, Change<VR>, ValueGetter<K, V2>>((c) => other.get(c), (r, ctx, get) => {
    if (r.key === null || r.key === undefined) return
    // Java's KTableKTable*Join: an out-of-order update of a versioned table is dropped (and counted), KIP-914.
    if (r.value.isLatest === false) return ctx.recordDropped?.()
    const o = get(r.key)
    const v2 = o === undefined ? null : o.value
    const { newValue, oldValue } = r.value
    let nv: VR | null = null
    let ov: VR | null = null
    let ts: number
    if (mode === 'inner' || mode === 'right') {
      if (v2 === null) return
      ts = Math.max(r.timestamp, o!.timestamp)
      if (mode === 'right') {
        nv = joiner(newValue, v2)
        if (old.enabled) ov = joiner(oldValue, v2)
      } else {
        if (newValue !== null) nv = joiner(newValue, v2)
        if (old.enabled && oldValue !== null) ov = joiner(oldValue, v2)
      }
    } else {
      if (v2 === null && newValue === null && oldValue === null) return
      ts = Math.max(r.timestamp, v2 === null ? UNKNOWN : o!.timestamp)
      if (mode === 'left') {
        if (newValue !== null) nv = joiner(newValue, v2)
        if (old.enabled && oldValue !== null) ov = joiner(oldValue, v2)
      } else {
        if (v2 !== null || newValue !== null) nv = joiner(newValue, v2)
        if (old.enabled && (v2 !== null || oldValue !== null)) ov = joiner(oldValue, v2)
      }
    }
    ctx.forward(r.withValue({ newValue: nv, oldValue: ov }).withTimestamp(ts))
  })
}

/** The join's own getter when it is not materialized (Java's KTableKTable*JoinValueGetter): both sides read and joined on the fly. */
function joinGetter<K, V1, V2, VR>(kind: TableJoinKind, left: ValueGetterSupplier<K, V1>, right: ValueGetterSupplier<K, V2>, joiner: Joiner<V1, V2, VR>): ValueGetterSupplier<K, VR> {
  return {
    storeNames: () => [...new Set([...left.storeNames(), ...right.storeNames()])],
    get: (ctx) => {
      const g1 = left.get(ctx)
      const g2 = right.get(ctx)
      return (key) => {
        const a = g1(key)
        if (a === undefined && kind !== 'outer') return undefined
        const b = kind === 'inner' && a === undefined ? undefined : g2(key)
        if (kind === 'inner' && b === undefined) return undefined
        if (a === undefined && b === undefined) return undefined
        const value = joiner(a === undefined ? null : a.value, b === undefined ? null : b.value)
        if (value === null || value === undefined) return undefined
        return { value, timestamp: Math.max(a?.timestamp ?? UNKNOWN, b?.timestamp ?? UNKNOWN) }
      }
    },
  }
}

/** Java's KTableKTableJoinMerger: the two sides' results as one table, stored when materialized. */
function merger<K, VR>(storeName: string | undefined, old: OldValues): ProcessorSupplier<K, Change<VR>, K, Change<VR>> {
  return contextual<K, Change<VR>, K, Change<VR>, TableStore<K, VR> | undefined>(
    (c) => (storeName === undefined ? undefined : tableStore<K, VR>(c.getStateStore(storeName))),
    (r, ctx, store) => {
      if (store) store.put(r.key, r.value.newValue, r.timestamp)
      ctx.forward(old.enabled ? r : r.withValue({ newValue: r.value.newValue, oldValue: null }))
    },
  )
}

/**
 * KTable-KTable join, leftJoin and outerJoin (Java's KTableImpl.doJoin): names drawn in Java's
 * order (a store for an unnamed Materialized, then KTABLE-MERGE-, KTABLE-JOINTHIS-,
 * KTABLE-JOINOTHER-); each side's processor reads the other side's stores, so both source
 * tables are materialized; left and outer joins make the outer side(s) send old values, so a
 * delete on a side with no match still forwards a tombstone.
 */
export function joinTables<K, V, VO, VR>(
  builder: StreamsBuilder,
  left: KTable<K, V>,
  right: KTable<K, VO>,
  joiner: Joiner<V, VO, VR>,
  kind: TableJoinKind,
  named: Named | Materialized<K, VR> | undefined,
  materialized: Materialized<K, VR> | undefined,
): KTable<K, VR> {
  const [n, m] = named instanceof Named ? [named, materialized] : [undefined, named ?? materialized]
  const b = builder.internal
  const storeName = m ? (m.storeName ?? b.newStoreName('KTABLE-MERGE-')) : undefined
  // Kafka Streams 4.4 draws each generated name even when Named replaces it (describe() shows the gaps).
  const pick = (suffix: string, prefix: string) => {
    const generated = b.newProcessorName(prefix)
    return n?.name === undefined ? generated : n.name + suffix
  }
  const mergeName = pick('', 'KTABLE-MERGE-')
  copartition(builder, left.nodeName, right.nodeName)
  if (kind !== 'inner') left.enableSendingOldValues(true)
  if (kind === 'outer') right.enableSendingOldValues(true)
  const thisName = pick('-join-this', 'KTABLE-JOINTHIS-')
  const otherName = pick('-join-other', 'KTABLE-JOINOTHER-')
  const leftGetter = left.valueGetter()
  const rightGetter = right.valueGetter()
  const old: OldValues = { enabled: false }
  const reversed = (v2: VO | null, v1: V | null) => joiner(v1, v2)
  const thisMode: SideMode = kind
  const otherMode: SideMode = kind === 'left' ? 'right' : kind
  b.topology.addProcessor(thisName, joinSide<K, V, VO, VR>(thisMode, rightGetter, joiner, old), [left.nodeName])
  b.topology.addProcessor(otherName, joinSide<K, VO, V, VR>(otherMode, leftGetter, reversed, old), [right.nodeName])
  b.topology.addProcessor(mergeName, merger<K, VR>(storeName, old), [thisName, otherName])
  for (const s of rightGetter.storeNames()) b.topology.connect(thisName, s)
  for (const s of leftGetter.storeNames()) b.topology.connect(otherName, s)
  const keySerde = m?.keySerde ?? left.keySerde
  const valueSerde: Serde<VR> | undefined = m?.valueSerde
  if (storeName !== undefined) b.addKeyValueStore(storeName, keySerde, valueSerde, mergeName, m, builder.defaults)
  // Java's KTableKTableJoinMerger.enableSendingOldValues: always possible, by forcing both sides.
  const table = new KTable<K, VR>(builder, mergeName, keySerde, valueSerde, m?.storeName, old, () => {
    left.enableSendingOldValues(true)
    right.enableSendingOldValues(true)
    return true
  })
  table.valueGetterSupplier = storeName !== undefined ? storeGetter(() => storeName) : joinGetter(kind, leftGetter, rightGetter, joiner)
  return table
}

/** The source topics upstream of a node (through processors, up to sources), as Java's subTopologySourceNodes name them. */
export function upstreamSourceTopics(builder: StreamsBuilder, nodeName: string): string[] {
  const out = new Set<string>()
  const seen = new Set<string>()
  const visit = (name: string) => {
    if (seen.has(name)) return
    seen.add(name)
    const node = builder.internal.topology.nodes.get(name)
    if (node === undefined) return
    if (node.kind === 'source') for (const t of node.topics) out.add(t)
    else for (const p of node.predecessors) visit(p)
  }
  visit(nodeName)
  return [...out]
}

/** Java's ensureCopartitionWith: the two inputs' source topics must have the same partition count at run time. */
export function copartition(builder: StreamsBuilder, a: string, b: string): void {
  builder.internal.topology.copartitionGroups.push([...new Set([...upstreamSourceTopics(builder, a), ...upstreamSourceTopics(builder, b)])])
}
