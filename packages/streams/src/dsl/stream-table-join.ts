import type { Serde } from '@tidelog/client'
import type { ProcessorContext, ProcessorSupplier } from '../processor.js'
import { Record } from '../record.js'
import { TimeOrderedKeyValueBuffer, TimeOrderedKeyValueBufferBuilder } from '../state/time-ordered-buffer.js'
import { VersionedKeyValueStoreBuilder } from '../state/versioned.js'
import { lazySerde, type StreamsBuilder } from './streams-builder.js'
import { KStream, createRepartitionedSource } from './kstream.js'
import type { KTable } from './ktable.js'
import { contextual, copartition, type ValueGetter, type ValueGetterSupplier } from './table-joins.js'

/**
 * Serdes, name and grace period of a stream-table join (Java's Joined): the name also names the
 * repartition topic a key change needs; a grace period (KIP-923) buffers stream records.
 */
export class Joined<K, V, VO> {
  private constructor(
    readonly keySerde?: Serde<K>,
    readonly valueSerde?: Serde<V>,
    readonly otherValueSerde?: Serde<VO>,
    readonly name?: string,
    readonly gracePeriodMs?: number,
  ) {}
  static with<K, V, VO>(keySerde?: Serde<K>, valueSerde?: Serde<V>, otherValueSerde?: Serde<VO>, name?: string, gracePeriodMs?: number): Joined<K, V, VO> {
    return new Joined(keySerde, valueSerde, otherValueSerde, name, gracePeriodMs)
  }
  static as<K, V, VO>(name: string): Joined<K, V, VO> {
    return new Joined<K, V, VO>(undefined, undefined, undefined, name)
  }
  withKeySerde(s: Serde<K>): Joined<K, V, VO> {
    return new Joined(s, this.valueSerde, this.otherValueSerde, this.name, this.gracePeriodMs)
  }
  withValueSerde(s: Serde<V>): Joined<K, V, VO> {
    return new Joined(this.keySerde, s, this.otherValueSerde, this.name, this.gracePeriodMs)
  }
  withOtherValueSerde(s: Serde<VO>): Joined<K, V, VO> {
    return new Joined(this.keySerde, this.valueSerde, s, this.name, this.gracePeriodMs)
  }
  withName(name: string): Joined<K, V, VO> {
    return new Joined(this.keySerde, this.valueSerde, this.otherValueSerde, name, this.gracePeriodMs)
  }
  /**
   * KIP-923: hold each stream record until stream time passes its timestamp plus `ms`, then join
   * it with the table as of its timestamp, in timestamp order. The table must be versioned, with
   * a history retention of at least `ms`.
   */
  withGracePeriod(ms: number): Joined<K, V, VO> {
    return new Joined(this.keySerde, this.valueSerde, this.otherValueSerde, this.name, ms)
  }
}

/**
 * Java's ValueJoiner `(value, other)` or ValueJoinerWithKey `(key, value, other)`: as in Java,
 * the arity tells them apart (a joiner declaring three parameters gets the key first).
 */
export type StreamJoiner<K, V, VO, VR> = ((value: V, other: VO) => VR) | ((key: K, value: V, other: VO) => VR)

export function withKey<K, V, VO, VR>(joiner: StreamJoiner<K, V, VO, VR>): (key: K, value: V, other: VO) => VR {
  if (joiner.length >= 3) return joiner as (key: K, value: V, other: VO) => VR
  const j = joiner as (value: V, other: VO) => VR
  return (_k, v, o) => j(v, o)
}

/**
 * Java's KStreamKTableJoinProcessor, for KTable and GlobalKTable joins alike: only stream
 * records trigger; a record with a null value, or whose join key maps to null, is dropped;
 * a left join keeps a null-key record (KIP-962) and joins it with null. The result keeps the
 * stream record's timestamp. A versioned table is read as of the record's timestamp (KIP-914);
 * with a grace buffer (KIP-923) records are joined as the buffer releases them, in time order,
 * and a record too late for the buffer is joined at once.
 */
export function streamTableJoinProcessor<K, V, KT, VT, VR>(
  table: ValueGetterSupplier<KT, VT>,
  keyMapper: (key: K, value: V) => KT | null | undefined,
  joiner: (key: K, value: V, other: VT | null) => VR,
  left: boolean,
  bufferName?: string,
): ProcessorSupplier<K, V, K, VR> {
  type State = { get: ValueGetter<KT, VT>; buffer: TimeOrderedKeyValueBuffer<K, V> | undefined }
  const doJoin = (r: Record<K, V>, ctx: ProcessorContext<K, VR>, get: ValueGetter<KT, VT>) => {
    const mapped = keyMapper(r.key, r.value)
    const other = mapped === null || mapped === undefined ? undefined : get.asOf ? get.asOf(mapped, r.timestamp) : get(mapped)
    if (!left && other === undefined) return
    ctx.forward(r.withValue(joiner(r.key, r.value, other === undefined ? null : other.value)))
  }
  return contextual<K, V, K, VR, State>((c) => {
    const get = table.get(c)
    if (bufferName !== undefined && get.asOf === undefined) throw new TypeError(GRACE_NEEDS_VERSIONED)
    return { get, buffer: bufferName === undefined ? undefined : c.getStateStore<TimeOrderedKeyValueBuffer<K, V>>(bufferName) }
  }, (r, ctx, { get, buffer }) => {
    const mapped = keyMapper(r.key, r.value)
    const nullKey = r.key === null || r.key === undefined
    const keep = left && nullKey && r.value !== null && r.value !== undefined
    // Java's maybeDropRecord: counted in dropped-records.
    if (!keep && (mapped === null || mapped === undefined || r.value === null || r.value === undefined)) return ctx.recordDropped?.()
    const meta = ctx.recordMetadata()
    // Java's buffer refuses null keys (a NullPointerException there); such a left-join record is joined at once.
    if (buffer === undefined || nullKey || !buffer.put(r.key, r.value, { timestamp: r.timestamp, headers: r.headers, topic: meta?.topic ?? '', partition: meta?.partition ?? -1, offset: meta?.offset ?? -1 })) return doJoin(r, ctx, get)
    buffer.evict((e) => doJoin(new Record(e.key, e.value, e.context.timestamp, e.context.headers), ctx, get))
  })
}

/** Java's IllegalArgumentException message. */
const GRACE_NEEDS_VERSIONED = 'KTable must be versioned to use a grace period in a stream table join.'

/** Java's StreamTableJoinNode checks: every store the join reads is versioned, with a history retention of at least the grace period. */
function checkGraceTable(builder: StreamsBuilder, storeNames: string[], graceMs: number): void {
  for (const s of storeNames) {
    const store = builder.internal.topology.stores.get(s)?.builder
    if (!(store instanceof VersionedKeyValueStoreBuilder)) throw new TypeError(GRACE_NEEDS_VERSIONED)
    if (graceMs > store.historyRetentionMs) throw new RangeError('History retention must be at least grace period.')
  }
}

/** The repartitioned source last made for a stream's join (Java's KStreamImpl.repartitionNode). */
const repartitioned = new WeakMap<KStream<any, any>, string>()

/**
 * KStream-KTable join / leftJoin (Java's KStreamImpl.join(KTable)): after a key change the stream
 * first goes through `<Joined name or stream node>-repartition`; the join processor reads the
 * table's stores (materializing a source table) and the inputs must be co-partitioned.
 * Kafka 4.4 draws the generated node name even when Joined names the join.
 */
export function joinStreamTable<K, V, VO, VR>(stream: KStream<K, V>, table: KTable<K, VO>, joiner: StreamJoiner<K, V, VO | null, VR>, joined: Joined<K, V, VO> | undefined, left: boolean): KStream<K, VR> {
  const builder = stream.builder
  const b = builder.internal
  let parent = stream.nodeName
  const keySerde = joined?.keySerde ?? stream.keySerde
  if (stream.repartitionRequired) {
    const prefix = joined?.name ?? stream.nodeName
    const earlier = repartitioned.get(stream)
    if (earlier !== undefined && prefix === stream.nodeName) {
      // Java's repartitionForJoin: an unnamed join reuses the stream's last repartition node (even a
      // named join's), but still burns its three names.
      for (const p of ['KSTREAM-SINK-', 'KSTREAM-FILTER-', 'KSTREAM-SOURCE-']) b.newProcessorName(p)
      parent = earlier
    } else {
      parent = createRepartitionedSource(builder, stream.nodeName, prefix, keySerde, joined?.valueSerde ?? stream.valueSerde)
      repartitioned.set(stream, parent)
    }
  }
  copartition(builder, parent, table.nodeName)
  const generated = b.newProcessorName(left ? 'KSTREAM-LEFTJOIN-' : 'KSTREAM-JOIN-')
  const name = joined?.name ?? generated
  const getter = table.valueGetter()
  const grace = joined?.gracePeriodMs
  const bufferName = grace === undefined ? undefined : `${name}-Buffer`
  if (grace !== undefined) checkGraceTable(builder, getter.storeNames(), grace)
  b.topology.addProcessor(name, streamTableJoinProcessor<K, V, K, VO, VR>(getter, (k) => k, withKey(joiner), left, bufferName), [parent])
  for (const s of getter.storeNames()) b.topology.connect(name, s)
  if (bufferName !== undefined) {
    const valueSerde = joined?.valueSerde ?? stream.valueSerde
    b.topology.addStateStore(new TimeOrderedKeyValueBufferBuilder(bufferName, grace!, lazySerde(keySerde, builder.defaults, true), lazySerde(valueSerde, builder.defaults, false)), [name])
  }
  return new KStream<K, VR>(builder, name, keySerde, undefined, false)
}
