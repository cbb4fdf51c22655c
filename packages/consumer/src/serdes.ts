import type { Deserializer, SerdeContext } from '@tidelog/client'
import type { Record } from '@tidelog/protocol'
import { RecordDeserializationError } from './errors.js'
import { ConsumerMessage } from './message.js'
import type { Message } from './types.js'

/** What to do with a record whose key or value cannot be deserialized. */
export type DeserializationErrorPolicy = 'stop' | 'skip'

/** A message whose key and value went through deserializers; same fields, same order, as ConsumerMessage. */
class TypedMessage<K, V> implements Message<K, V> {
  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly offset: bigint,
    readonly key: K | null,
    readonly value: V | null,
    readonly headers: Message['headers'],
    readonly timestamp: bigint,
    readonly timestampType: 0 | 1,
    readonly leaderEpoch: number,
  ) {}
}

/**
 * Builds the application's messages from records. Without deserializers it builds the raw
 * message and nothing else (the hot path stays synchronous); with them, each non-null key and
 * value goes through its deserializer, which may be async.
 */
export class MessageDecoder<K, V> {
  readonly raw: boolean

  constructor(
    private readonly keyDeserializer: Deserializer<K> | undefined,
    private readonly valueDeserializer: Deserializer<V> | undefined,
  ) {
    this.raw = keyDeserializer === undefined && valueDeserializer === undefined
  }

  /** From a record (the runner's path). Throws or rejects with RecordDeserializationError. */
  fromRecord(topic: string, partition: number, r: Record, timestampType: 0 | 1, leaderEpoch: number): Message<K, V> | Promise<Message<K, V>> {
    const m = new ConsumerMessage(topic, partition, r, timestampType, leaderEpoch)
    return this.raw ? (m as unknown as Message<K, V>) : this.decode(m)
  }

  /** From a raw message (the iterators' path). */
  decode(m: Message): Message<K, V> | Promise<Message<K, V>> {
    if (this.raw) return m as unknown as Message<K, V>
    const key = this.one(this.keyDeserializer, m, true)
    const value = this.one(this.valueDeserializer, m, false)
    if (key instanceof Promise || value instanceof Promise) {
      return Promise.all([key, value]).then(([k, v]) => this.build(m, k, v))
    }
    return this.build(m, key, value)
  }

  private build(m: Message, key: K | null, value: V | null): Message<K, V> {
    return new TypedMessage(m.topic, m.partition, m.offset, key, value, m.headers, m.timestamp, m.timestampType, m.leaderEpoch)
  }

  private one<T>(d: Deserializer<T> | undefined, m: Message, isKey: boolean): T | null | Promise<T | null> {
    const data = isKey ? m.key : m.value
    if (data === null) return null
    if (d === undefined) return data as unknown as T
    const context: SerdeContext = { topic: m.topic, partition: m.partition, headers: m.headers, isKey }
    const fail = (err: unknown): never => {
      throw new RecordDeserializationError(m.topic, m.partition, m.offset, isKey, err)
    }
    try {
      const out = d.deserialize(data, context)
      return out instanceof Promise ? out.catch(fail) : out
    } catch (err) {
      return fail(err)
    }
  }
}
