import { serdes as clientSerdes, type Serde } from '@tidelog/client'
import { StreamsException } from './errors.js'

/**
 * Streams serdes are the clients' Serde (same interface, so a schema-registry serde written for
 * the producer works here), but used synchronously: a task processes one record at a time, as
 * Kafka Streams does, and a serde returning a Promise is rejected with a clear error.
 */
export type { Serde, Serializer, Deserializer, SerdeContext } from '@tidelog/client'

const TWO_32 = 4294967296

/**
 * 8-byte big-endian two's complement, as Java's LongSerializer (count() results use it). Safe
 * integers, what counts are, go as two 32-bit halves: no BigInt per record.
 */
const long: Serde<number | bigint> = {
  serialize: (v) => {
    if (typeof v !== 'bigint' && !Number.isSafeInteger(v)) throw new TypeError(`the Long serializer needs an integer, got ${typeof v === 'number' ? v : typeof v}`)
    const b = Buffer.alloc(8)
    if (typeof v === 'bigint') {
      b.writeBigInt64BE(v)
      return b
    }
    const high = Math.floor(v / TWO_32)
    b.writeInt32BE(high, 0)
    b.writeUInt32BE(v - high * TWO_32, 4)
    return b
  },
  deserialize: (b) => {
    if (b.length !== 8) throw new StreamsException(`Size of data received by LongDeserializer is not 8 (got ${b.length})`)
    const n = b.readInt32BE(0) * TWO_32 + b.readUInt32BE(4)
    // Exact whenever it is safe; outside that range the halves may round, so BigInt decides.
    if (Number.isSafeInteger(n)) return n
    const big = b.readBigInt64BE()
    return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big
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
