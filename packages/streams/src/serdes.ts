import { serdes as clientSerdes, type Serde } from '@tidelog/client'
import { StreamsException } from './errors.js'

/**
 * Streams serdes are the clients' Serde (same interface, so a schema-registry serde written for
 * the producer works here), but used synchronously: a task processes one record at a time, as
 * Kafka Streams does, and a serde returning a Promise is rejected with a clear error.
 */
export type { Serde, Serializer, Deserializer, SerdeContext } from '@tidelog/client'

/** 8-byte big-endian two's complement, as Java's LongSerializer (count() results use it). */
const long: Serde<number | bigint> = {
  serialize: (v) => {
    if (typeof v !== 'bigint' && !Number.isSafeInteger(v)) throw new TypeError(`the Long serializer needs an integer, got ${typeof v === 'number' ? v : typeof v}`)
    const b = Buffer.alloc(8)
    b.writeBigInt64BE(typeof v === 'bigint' ? v : BigInt(v))
    return b
  },
  deserialize: (b) => {
    if (b.length !== 8) throw new StreamsException(`Size of data received by LongDeserializer is not 8 (got ${b.length})`)
    const n = b.readBigInt64BE()
    return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n
  },
}

/** 4-byte big-endian, as Java's IntegerSerializer. */
const integer: Serde<number> = {
  serialize: (v) => {
    if (!Number.isInteger(v)) throw new TypeError(`the Integer serializer needs an integer, got ${typeof v === 'number' ? v : typeof v}`)
    const b = Buffer.alloc(4)
    b.writeInt32BE(v)
    return b
  },
  deserialize: (b) => {
    if (b.length !== 4) throw new StreamsException(`Size of data received by IntegerDeserializer is not 4 (got ${b.length})`)
    return b.readInt32BE()
  },
}

/** IEEE 754 double, big-endian, as Java's DoubleSerializer. */
const double: Serde<number> = {
  serialize: (v) => {
    if (typeof v !== 'number') throw new TypeError(`the Double serializer needs a number, got ${typeof v}`)
    const b = Buffer.alloc(8)
    b.writeDoubleBE(v)
    return b
  },
  deserialize: (b) => {
    if (b.length !== 8) throw new StreamsException(`Size of data received by DoubleDeserializer is not 8 (got ${b.length})`)
    return b.readDoubleBE()
  },
}

/** Java's Serdes factory names; String and ByteArray are the clients' own serdes. */
export const Serdes = {
  String: () => clientSerdes.string,
  ByteArray: () => clientSerdes.buffer,
  Buffer: () => clientSerdes.buffer,
  Long: () => long as Serde<number>,
  Integer: () => integer,
  Double: () => double,
  Json: <T = unknown>() => clientSerdes.json<T>(),
} as const
