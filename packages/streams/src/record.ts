import type { RecordHeader } from '@tidelog/protocol'

export type Headers = readonly RecordHeader[]

/**
 * A record flowing through a topology (Java's org.apache.kafka.streams.processor.api.Record):
 * immutable; the with* methods return a copy, so a processor can forward variants of one input.
 */
export class Record<K, V> {
  constructor(
    readonly key: K,
    readonly value: V,
    readonly timestamp: number,
    readonly headers: Headers = [],
  ) {
    if (!Number.isFinite(timestamp) || timestamp < 0) {
      throw new RangeError(`Timestamp may not be negative (got ${timestamp})`)
    }
  }

  withKey<NK>(key: NK): Record<NK, V> {
    return new Record(key, this.value, this.timestamp, this.headers)
  }

  withValue<NV>(value: NV): Record<K, NV> {
    return new Record(this.key, value, this.timestamp, this.headers)
  }

  withTimestamp(timestamp: number): Record<K, V> {
    return new Record(this.key, this.value, timestamp, this.headers)
  }

  withHeaders(headers: Headers): Record<K, V> {
    return new Record(this.key, this.value, this.timestamp, headers)
  }
}

/** Where the record being processed came from (Java's RecordMetadata); absent in punctuators. */
export interface RecordMetadata {
  readonly topic: string
  readonly partition: number
  readonly offset: number
}
