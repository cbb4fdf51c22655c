import type { Serde } from '@tidelog/client'
import type { ProcessorSupplier } from '../processor.js'
import { KStream, createRepartitionedSource } from './kstream.js'
import type { KTable } from './ktable.js'
import { contextual, copartition, type ValueGetter, type ValueGetterSupplier } from './table-joins.js'

/** Serdes and name of a stream-table join (Java's Joined): the name also names the repartition topic a key change needs. */
export class Joined<K, V, VO> {
  private constructor(
    readonly keySerde?: Serde<K>,
    readonly valueSerde?: Serde<V>,
    readonly otherValueSerde?: Serde<VO>,
    readonly name?: string,
  ) {}
  static with<K, V, VO>(keySerde?: Serde<K>, valueSerde?: Serde<V>, otherValueSerde?: Serde<VO>, name?: string): Joined<K, V, VO> {
    return new Joined(keySerde, valueSerde, otherValueSerde, name)
  }
  static as<K, V, VO>(name: string): Joined<K, V, VO> {
    return new Joined<K, V, VO>(undefined, undefined, undefined, name)
  }
  withKeySerde(s: Serde<K>): Joined<K, V, VO> {
    return new Joined(s, this.valueSerde, this.otherValueSerde, this.name)
  }
  withValueSerde(s: Serde<V>): Joined<K, V, VO> {
    return new Joined(this.keySerde, s, this.otherValueSerde, this.name)
  }
  withOtherValueSerde(s: Serde<VO>): Joined<K, V, VO> {
    return new Joined(this.keySerde, this.valueSerde, s, this.name)
  }
  withName(name: string): Joined<K, V, VO> {
    return new Joined(this.keySerde, this.valueSerde, this.otherValueSerde, name)
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
 * stream record's timestamp.
 */
export function streamTableJoinProcessor<K, V, KT, VT, VR>(
  table: ValueGetterSupplier<KT, VT>,
  keyMapper: (key: K, value: V) => KT | null | undefined,
  joiner: (key: K, value: V, other: VT | null) => VR,
  left: boolean,
): ProcessorSupplier<K, V, K, VR> {
  return contextual<K, V, K, VR, ValueGetter<KT, VT>>((c) => table.get(c), (r, ctx, get) => {
    const mapped = keyMapper(r.key, r.value)
    const nullKey = r.key === null || r.key === undefined
    const keep = left && nullKey && r.value !== null && r.value !== undefined
    if (!keep && (mapped === null || mapped === undefined || r.value === null || r.value === undefined)) return
    const other = mapped === null || mapped === undefined ? undefined : get(mapped)
    if (!left && other === undefined) return
    ctx.forward(r.withValue(joiner(r.key, r.value, other === undefined ? null : other.value)))
  })
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
  b.topology.addProcessor(name, streamTableJoinProcessor<K, V, K, VO, VR>(getter, (k) => k, withKey(joiner), left), [parent])
  for (const s of getter.storeNames()) b.topology.connect(name, s)
  return new KStream<K, VR>(builder, name, keySerde, undefined, false)
}
