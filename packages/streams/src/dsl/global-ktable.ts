import type { Serde } from '@tidelog/client'
import { TopologyException } from '../errors.js'
import { isVersionedSupplier } from '../state/versioned.js'
import { KStream } from './kstream.js'
import { Consumed, Materialized, Named } from './options.js'
import { tableSourceProcessor } from './processors.js'
import { streamTableJoinProcessor, withKey, type StreamJoiner } from './stream-table-join.js'
import type { StreamsBuilder } from './streams-builder.js'
import { storeGetter } from './table-joins.js'

/**
 * A table replicated in full on every instance (Java's GlobalKTable): fed from every partition
 * of its topic by a global task (no changelog: the topic is the changelog) and read by
 * KStream-GlobalKTable joins through a key mapper, so the stream need not be co-partitioned.
 */
export class GlobalKTable<K, V> {
  /** @internal */
  constructor(
    readonly queryableStoreName: string,
    readonly keySerde: Serde<K> | undefined,
    readonly valueSerde: Serde<V> | undefined,
  ) {}
}

/**
 * Java's StreamsBuilder#globalTable: the store name is drawn first (`<topic>-STATE-STORE-<n>`),
 * then KSTREAM-SOURCE- and KTABLE-SOURCE-; the store has logging disabled, as Java's global stores.
 */
export function addGlobalTable<K, V>(builder: StreamsBuilder, topic: string, consumed: Consumed<K, V>, materialized: Materialized<K, V> | undefined): GlobalKTable<K, V> {
  if (isVersionedSupplier(materialized?.storeSupplier)) throw new TopologyException('GlobalTables cannot be versioned.')
  const b = builder.internal
  const storeName = materialized?.storeName ?? b.newStoreName(`${topic}-`)
  const sourceName = consumed.name ?? b.newProcessorName('KSTREAM-SOURCE-')
  const tableName = b.newProcessorName('KTABLE-SOURCE-')
  const keySerde = materialized?.keySerde ?? consumed.keySerde
  const valueSerde = materialized?.valueSerde ?? consumed.valueSerde
  b.topology.addSource({
    name: sourceName,
    topics: [topic],
    ...(keySerde ? { keySerde } : {}),
    ...(valueSerde ? { valueSerde } : {}),
    ...(consumed.timestampExtractor ? { timestampExtractor: consumed.timestampExtractor } : {}),
  })
  b.topology.addProcessor(tableName, tableSourceProcessor<K, V>({ storeName }, { enabled: false }), [sourceName])
  b.addKeyValueStore(storeName, keySerde, valueSerde, tableName, (materialized ?? Materialized.with<K, V>()).withLoggingDisabled(), builder.defaults)
  b.topology.globalTopics.add(topic)
  return new GlobalKTable<K, V>(storeName, keySerde, valueSerde)
}

/**
 * KStream-GlobalKTable join / leftJoin (Java's KStreamImpl.globalTableJoin): named
 * KSTREAM-LEFTJOIN- for both kinds, as Java names them; the processor reaches the global store
 * without being connected to it (describe() lists no store).
 */
export function joinGlobal<K, V, GK, GV, VR>(stream: KStream<K, V>, table: GlobalKTable<GK, GV>, keyMapper: (key: K, value: V) => GK | null | undefined, joiner: StreamJoiner<K, V, GV | null, VR>, named: Named | undefined, left: boolean): KStream<K, VR> {
  const b = stream.builder.internal
  const generated = b.newProcessorName('KSTREAM-LEFTJOIN-')
  const name = named?.name ?? generated
  const getter = storeGetter<GK, GV>(() => table.queryableStoreName)
  b.topology.addProcessor(name, streamTableJoinProcessor<K, V, GK, GV, VR>(getter, keyMapper, withKey(joiner), left), [stream.nodeName])
  return new KStream<K, VR>(stream.builder, name, stream.keySerde, undefined, stream.repartitionRequired)
}
