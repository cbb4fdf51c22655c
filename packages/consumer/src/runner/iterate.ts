import type { Logger } from '@tidelog/client'
import { RecordDeserializationError } from '../errors.js'
import type { DeserializationErrorPolicy, MessageDecoder } from '../serdes.js'
import type { Batch, Message } from '../types.js'

export interface DecodingHooks<K, V> {
  decoder: MessageDecoder<K, V>
  policy: DeserializationErrorPolicy
  logger: Logger
  /** Puts the partition's position back at `offset` (the record that failed). */
  rewind(topic: string, partition: number, offset: bigint): void
}

/**
 * The iterators with deserializers: each raw message (or batch) goes through the decoder. A
 * record that fails with 'stop' puts the partition back at it and throws
 * RecordDeserializationError (Java's poll() does the same: seek past it to go on); with 'skip'
 * it is logged and left out.
 */
export class DecodingIterator<K, V, T extends Message | Batch> implements AsyncIterableIterator<T extends Batch ? Batch<K, V> : Message<K, V>> {
  constructor(
    private readonly raw: AsyncIterableIterator<T>,
    private readonly hooks: DecodingHooks<K, V>,
  ) {}

  async next(): Promise<IteratorResult<T extends Batch ? Batch<K, V> : Message<K, V>>> {
    for (;;) {
      const r = await this.raw.next()
      if (r.done === true) return r
      const v = r.value
      const out = 'messages' in v ? await this.batch(v) : await this.message(v)
      if (out !== undefined) return { value: out as T extends Batch ? Batch<K, V> : Message<K, V>, done: false }
    }
  }

  private async message(m: Message): Promise<Message<K, V> | undefined> {
    try {
      return await this.hooks.decoder.decode(m)
    } catch (err) {
      return this.failed(err)
    }
  }

  private async batch(b: Batch): Promise<Batch<K, V> | undefined> {
    const messages: Message<K, V>[] = []
    for (const m of b.messages) {
      try {
        messages.push(await this.hooks.decoder.decode(m))
      } catch (err) {
        if (this.hooks.policy === 'skip' || messages.length === 0) {
          this.failed(err)
          continue
        }
        // Hand over the records before the bad one; the next call meets it again and throws.
        this.hooks.rewind(m.topic, m.partition, m.offset)
        return { ...b, messages, nextOffset: m.offset }
      }
    }
    return messages.length === 0 ? undefined : { ...b, messages }
  }

  private failed(err: unknown): undefined {
    if (!(err instanceof RecordDeserializationError) || this.hooks.policy === 'stop') {
      if (err instanceof RecordDeserializationError) this.hooks.rewind(err.topic, err.partition, err.offset)
      void this.raw.return?.()
      throw err
    }
    this.hooks.logger.warn({ err, topic: err.topic, partition: err.partition, offset: err.offset }, 'skipping a record that cannot be deserialized')
    return undefined
  }

  return(): Promise<IteratorResult<T extends Batch ? Batch<K, V> : Message<K, V>>> {
    return this.raw.return!() as Promise<IteratorResult<T extends Batch ? Batch<K, V> : Message<K, V>>>
  }

  [Symbol.asyncIterator](): this {
    return this
  }
}
