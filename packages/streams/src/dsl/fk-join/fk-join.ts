import type { Serde } from '@tidelog/client'
import type { ProcessorContext, ProcessorSupplier, StreamPartitioner } from '../../processor.js'
import { serializeSync, type KeyValueStore, type ValueAndTimestamp } from '../../store.js'
import { Serdes } from '../../serdes.js'
import { KTable } from '../ktable.js'
import { Materialized, Named } from '../options.js'
import { tableSourceProcessor, type Change, type OldValues } from '../processors.js'
import { lazySerde, type StreamsBuilder } from '../streams-builder.js'
import { contextual, storeGetter, upstreamSourceTopics, type ValueGetter, type ValueGetterSupplier } from '../table-joins.js'
import { hashEquals, murmur3Hash128 } from './murmur3.js'
import { Instruction, combinedKey, combinedKeyPrefix, responseSerde, splitCombinedKey, subscriptionSerde, type Hash, type Subscription, type SubscriptionResponse } from './wrappers.js'

/**
 * Names and partitioners of a foreign-key join (Java's TableJoined): `partitioner` partitions this
 * table (responses follow it), `otherPartitioner` the foreign table (subscriptions follow it).
 */
export class TableJoined<K, KO> {
  private constructor(
    readonly partitioner?: StreamPartitioner<K, void>,
    readonly otherPartitioner?: StreamPartitioner<KO, void>,
    readonly name?: string,
  ) {}
  static with<K = any, KO = any>(partitioner?: StreamPartitioner<K, void>, otherPartitioner?: StreamPartitioner<KO, void>): TableJoined<K, KO> {
    return new TableJoined(partitioner, otherPartitioner)
  }
  static as<K = any, KO = any>(name: string): TableJoined<K, KO> {
    return new TableJoined<K, KO>(undefined, undefined, name)
  }
  withPartitioner(p: StreamPartitioner<K, void>): TableJoined<K, KO> {
    return new TableJoined(p, this.otherPartitioner, this.name)
  }
  withOtherPartitioner(p: StreamPartitioner<KO, void>): TableJoined<K, KO> {
    return new TableJoined(this.partitioner, p, this.name)
  }
  withName(name: string): TableJoined<K, KO> {
    return new TableJoined(this.partitioner, this.otherPartitioner, name)
  }
}

type SubscriptionStore<K> = KeyValueStore<Buffer, ValueAndTimestamp<Subscription<K>>>

/**
 * Java's SubscriptionSendProcessorSupplier (4.4's rules): a left-table update subscribes its row
 * to the new foreign key (and unsubscribes it from the old one), carrying the hash of the new
 * value. A left join always asks for an answer; an inner join only when a tombstone may be owed.
 */
function subscriptionSend<K, V, KO>(extract: (key: K, value: V) => KO | null | undefined, fkSerde: Serde<KO>, valueSerde: Serde<V>, left: boolean): ProcessorSupplier<K, Change<V>, KO | null, Subscription<K>> {
  return () => {
    let ctx!: ProcessorContext<KO | null, Subscription<K>>
    return {
      init: (c) => { ctx = c },
      process: (r) => {
        // Java drops (and counts) an out-of-order update of a versioned table (KIP-914).
        if (r.value.isLatest === false) return ctx.recordDropped?.()
        const { newValue, oldValue } = r.value
        const isNull = (x: unknown): x is null | undefined => x === null || x === undefined
        const hash: Hash | null = newValue === null ? null : murmur3Hash128(serializeSync(valueSerde, newValue, false))
        const send = (fk: KO | null | undefined, instruction: Instruction) => ctx.forward(r.withKey(fk ?? null).withValue({
          hash,
          instruction,
          primaryKey: r.key,
          primaryPartition: ctx.recordMetadata()?.partition ?? ctx.taskId.partition,
        }))
        const changed = (a: KO | null | undefined, b: KO) => isNull(a) || !serializeSync(fkSerde, a, true).equals(serializeSync(fkSerde, b, true))
        const oldFk = oldValue === null ? null : extract(r.key, oldValue)
        if (left) {
          if (oldValue === null && newValue === null) return
          const newFk = newValue === null ? null : extract(r.key, newValue)
          // The old subscription lives on another partition when the key changed: delete it
          // quietly; the new one (even for a null key, on a delete) always answers.
          if (!isNull(oldFk) && changed(newFk, oldFk)) send(oldFk, Instruction.DELETE_KEY_NO_PROPAGATE)
          send(newFk, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
          return
        }
        if (newValue === null) {
          if (!isNull(oldFk)) send(oldFk, Instruction.DELETE_KEY_AND_PROPAGATE)
          return
        }
        const newFk = extract(r.key, newValue)
        if (isNull(newFk)) {
          if (!isNull(oldFk)) send(oldFk, Instruction.DELETE_KEY_AND_PROPAGATE)
        } else if (isNull(oldFk)) {
          send(newFk, Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)
        } else if (changed(newFk, oldFk)) {
          send(oldFk, Instruction.DELETE_KEY_NO_PROPAGATE)
          send(newFk, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
        } else {
          // Same foreign key: a missing foreign row did not join before either, so no tombstone is owed.
          send(newFk, Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)
        }
      },
    }
  }
}

interface Subscribed<K, KO> {
  foreignKey: KO | null
  subscription: Subscription<K>
  timestamp: number
}

/** Java's SubscriptionReceiveProcessorSupplier: keeps each (foreign key, primary key) subscription in the store, or drops it on a delete. */
function subscriptionReceive<K, KO>(storeName: string, fkSerde: Serde<KO>, pkSerde: Serde<K>): ProcessorSupplier<KO | null, Subscription<K>, KO | null, Subscribed<K, KO>> {
  return contextual<KO | null, Subscription<K>, KO | null, Subscribed<K, KO>, SubscriptionStore<K>>((c) => c.getStateStore(storeName), (r, ctx, store) => {
    const s = r.value
    if ((r.key === null || r.key === undefined) && s.instruction !== Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE) return
    if (r.key !== null && r.key !== undefined) {
      const key = combinedKey(serializeSync(fkSerde, r.key, true), serializeSync(pkSerde, s.primaryKey, true))
      if (s.instruction === Instruction.DELETE_KEY_AND_PROPAGATE || s.instruction === Instruction.DELETE_KEY_NO_PROPAGATE) store.delete(key)
      else store.put(key, { value: s, timestamp: r.timestamp })
    }
    ctx.forward(r.withValue({ foreignKey: r.key ?? null, subscription: s, timestamp: r.timestamp }))
  })
}

/** Java's SubscriptionJoinProcessorSupplier: answers a subscription with the foreign row's current value, as its instruction says. */
function subscriptionJoin<K, KO, VO>(foreign: ValueGetterSupplier<KO, VO>): ProcessorSupplier<KO | null, Subscribed<K, KO>, K, SubscriptionResponse<VO>> {
  return contextual<KO | null, Subscribed<K, KO>, K, SubscriptionResponse<VO>, ValueGetter<KO, VO>>((c) => foreign.get(c), (r, ctx, get) => {
    const { subscription: s, foreignKey, timestamp } = r.value
    const fv = foreignKey === null ? undefined : get(foreignKey)
    const ts = fv === undefined ? timestamp : Math.max(timestamp, fv.timestamp)
    const answer = (foreignValue: VO | null) => ctx.forward(r.withKey(s.primaryKey).withValue({ hash: s.hash, foreignValue, primaryPartition: s.primaryPartition }).withTimestamp(ts))
    switch (s.instruction) {
      case Instruction.DELETE_KEY_AND_PROPAGATE: return answer(null)
      case Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE: return answer(fv === undefined ? null : fv.value)
      case Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE: if (fv !== undefined) answer(fv.value); return
      case Instruction.DELETE_KEY_NO_PROPAGATE: return
    }
  })
}

/** Java's ForeignTableJoinProcessorSupplier: a foreign-table update answers every subscriber of its key (a prefix scan of the store). */
function foreignTableJoin<K, KO, VO>(storeName: string, fkSerde: Serde<KO>): ProcessorSupplier<KO, Change<VO>, K, SubscriptionResponse<VO>> {
  return contextual<KO, Change<VO>, K, SubscriptionResponse<VO>, SubscriptionStore<K>>((c) => c.getStateStore(storeName), (r, ctx, store) => {
    if (r.key === null || r.key === undefined) return
    if (r.value.isLatest === false) return ctx.recordDropped?.()
    const prefix = combinedKeyPrefix(serializeSync(fkSerde, r.key, true))
    for (const { key, value } of store.range(prefix, undefined)) {
      if (key.length < prefix.length || !key.subarray(0, prefix.length).equals(prefix)) break
      if (!splitCombinedKey(key).foreignKey.equals(prefix.subarray(4))) continue
      const s = value.value
      ctx.forward(r.withKey(s.primaryKey).withValue({ hash: s.hash, foreignValue: r.value.newValue, primaryPartition: s.primaryPartition }))
    }
  })
}

/**
 * Java's ResponseJoinProcessorSupplier: joins a response with the left row's current value, but
 * only when the row still hashes to what it subscribed with; a stale response (the row changed
 * again since) is dropped.
 */
function responseJoin<K, V, VO, VR>(primary: ValueGetterSupplier<K, V>, valueSerde: Serde<V>, joiner: (v: V | null, vo: VO | null) => VR, left: boolean): ProcessorSupplier<K, SubscriptionResponse<VO>, K, VR | null> {
  return contextual<K, SubscriptionResponse<VO>, K, VR | null, ValueGetter<K, V>>((c) => primary.get(c), (r, ctx, get) => {
    const current = get(r.key)
    const hash = current === undefined ? null : murmur3Hash128(serializeSync(valueSerde, current.value, false))
    if (!hashEquals(r.value.hash, hash)) return
    const tombstone = r.value.foreignValue === null && (!left || current === undefined)
    ctx.forward(r.withValue(tombstone ? null : joiner(current === undefined ? null : current.value, r.value.foreignValue)))
  })
}

/**
 * KTable-KTable foreign-key join (KIP-213; Java's KTableImpl.doJoinOnForeignKey), with Java's
 * node, store and topic names drawn in Java's order: the left table sends subscriptions to
 * `KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-<n>-topic` (partitioned by foreign key, so
 * co-partitioned with the right table); the right side keeps them in a store and answers on
 * `KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-<n>-topic`, routed back to the subscriber's partition.
 */
export function joinOnForeignKey<K, V, KO, VO, VR>(
  builder: StreamsBuilder,
  leftTable: KTable<K, V>,
  other: KTable<KO, VO>,
  extractor: ((value: V) => KO | null | undefined) | ((key: K, value: V) => KO | null | undefined),
  joiner: (value: V | null, other: VO | null) => VR,
  left: boolean,
  named: TableJoined<K, KO> | Named | Materialized<K, VR> | undefined,
  materialized: Materialized<K, VR> | undefined,
): KTable<K, VR> {
  const [n, m] = named instanceof Named || named instanceof TableJoined ? [named, materialized] : [undefined, named ?? materialized]
  const joined = n instanceof TableJoined ? n : undefined
  const b = builder.internal
  const t = b.topology
  // Kafka Streams 4.4 draws each generated name even when TableJoined / Named replaces it.
  const name = (suffix: string, prefix: string) => {
    const generated = b.newProcessorName(prefix)
    return n?.name === undefined ? generated : n.name + suffix
  }
  other.enableSendingOldValues(true)
  leftTable.enableSendingOldValues(true)
  // Java's Function<V, KO> or BiFunction<K, V, KO> (KIP-1104): told apart by arity.
  const extract = extractor.length >= 2 ? (extractor as (key: K, value: V) => KO | null | undefined) : (_k: K, v: V) => (extractor as (value: V) => KO | null | undefined)(v)
  const pkSerde = lazySerde(leftTable.keySerde, builder.defaults, true) as Serde<K>
  const fkSerde = lazySerde(other.keySerde, builder.defaults, true) as Serde<KO>
  const valueSerde = lazySerde(leftTable.valueSerde, builder.defaults, false) as Serde<V>
  const foreignValueSerde = lazySerde(other.valueSerde, builder.defaults, false) as Serde<VO>
  const subscriptions = subscriptionSerde(pkSerde)
  const responses = responseSerde(foreignValueSerde)

  const subscriptionTopic = `${name('-subscription-registration', 'KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-')}-topic`
  t.addInternalTopic({ name: subscriptionTopic, kind: 'repartition' })
  const send = name('-subscription-registration-processor', 'KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-')
  t.addProcessor(send, subscriptionSend<K, V, KO>(extract, fkSerde, valueSerde, left), [leftTable.nodeName])
  const sendSink = name('-subscription-registration-sink', 'KTABLE-SINK-')
  const otherPartitioner = joined?.otherPartitioner
  t.addSink({
    name: sendSink,
    topic: subscriptionTopic,
    keySerde: fkSerde,
    valueSerde: subscriptions,
    ...(otherPartitioner ? { partitioner: (topic: string, fk: KO, _v: unknown, count: number) => otherPartitioner(topic, fk, undefined, count) } : {}),
  }, [send])
  const subscriptionSource = name('-subscription-registration-source', 'KTABLE-SOURCE-')
  t.addSource({ name: subscriptionSource, topics: [subscriptionTopic], keySerde: fkSerde, valueSerde: subscriptions })
  t.copartitionGroups.push([...new Set([...upstreamSourceTopics(builder, other.nodeName), subscriptionTopic])])

  const storeName = name('-subscription-store', 'KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-')
  const receive = name('-subscription-receive', 'KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-')
  t.addProcessor(receive, subscriptionReceive<K, KO>(storeName, fkSerde, pkSerde), [subscriptionSource])
  b.addKeyValueStore(storeName, Serdes.ByteArray(), subscriptions, receive, undefined, builder.defaults)
  const foreignGetter = other.valueGetter()
  const joinForeign = name('-subscription-join-foreign', 'KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-')
  t.addProcessor(joinForeign, subscriptionJoin<K, KO, VO>(foreignGetter), [receive])
  for (const s of foreignGetter.storeNames()) t.connect(joinForeign, s)
  const foreignJoin = name('-foreign-join-subscription', 'KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-')
  t.addProcessor(foreignJoin, foreignTableJoin<K, KO, VO>(storeName, fkSerde), [other.nodeName])
  t.connect(foreignJoin, storeName)

  const responseTopic = `${name('-subscription-response', 'KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-')}-topic`
  t.addInternalTopic({ name: responseTopic, kind: 'repartition' })
  const responseSink = name('-subscription-response-sink', 'KTABLE-SINK-')
  // Java's default response partitioner: back to the partition the subscription came from.
  const partitioner = joined?.partitioner
  t.addSink({
    name: responseSink,
    topic: responseTopic,
    keySerde: pkSerde,
    valueSerde: responses,
    partitioner: partitioner ? (topic: string, k: K, _v: unknown, count: number) => partitioner(topic, k, undefined, count) : (_t: string, _k: K, v: SubscriptionResponse<VO>) => v.primaryPartition,
  }, [joinForeign, foreignJoin])
  const responseSource = name('-subscription-response-source', 'KTABLE-SOURCE-')
  t.addSource({ name: responseSource, topics: [responseTopic], keySerde: pkSerde, valueSerde: responses })
  t.copartitionGroups.push([...new Set([...upstreamSourceTopics(builder, leftTable.nodeName), responseTopic])])
  const primaryGetter = leftTable.valueGetter()
  const resolver = name('-subscription-response-resolver', 'KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-')
  t.addProcessor(resolver, responseJoin<K, V, VO, VR>(primaryGetter, valueSerde, joiner, left), [responseSource])
  for (const s of primaryGetter.storeNames()) t.connect(resolver, s)

  const output = name('-result', 'KTABLE-FK-JOIN-OUTPUT-')
  const resultStore = m?.storeName ?? b.newStoreName('KTABLE-FK-JOIN-OUTPUT-')
  const source = { storeName: m?.storeName }
  const old: OldValues = { enabled: false }
  t.addProcessor(output, tableSourceProcessor<K, VR>(source, old), [resolver])
  const keySerde = m?.keySerde ?? leftTable.keySerde
  const resultSerde = m?.valueSerde
  if (m?.storeName !== undefined) b.addKeyValueStore(resultStore, keySerde, resultSerde, output, m, builder.defaults)
  // The result is a KTableSource, as in Java: old values or a join downstream materialize it then.
  const materialize = (force: boolean) => {
    if (source.storeName !== undefined) return true
    if (!force) return false
    source.storeName = resultStore
    b.addKeyValueStore(resultStore, keySerde, resultSerde, output, m, builder.defaults)
    return true
  }
  const table = new KTable<K, VR>(builder, output, keySerde, resultSerde, m?.storeName, old, materialize)
  table.valueGetterSupplier = storeGetter(() => {
    materialize(true)
    return source.storeName!
  })
  return table
}
