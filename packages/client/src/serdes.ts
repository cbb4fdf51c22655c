import type { RecordHeader } from '@tidelog/protocol'

/**
 * Where a (de)serializer is used: Java's Serializer/Deserializer get the topic and headers
 * too, which a schema-registry serde needs (subject names come from the topic).
 */
export interface SerdeContext {
  topic: string
  /** The partition, once known (always when deserializing; not yet chosen when serializing). */
  partition?: number
  headers: readonly RecordHeader[]
  /** True for the key, false for the value (Java's `isKey` in Deserializer.configure). */
  isKey: boolean
}

/**
 * Turns an application value into record bytes. May be async (a schema registry lookup).
 * null is never passed: a null key or value (a tombstone) stays null on the wire.
 */
export interface Serializer<T> {
  serialize(value: T, context: SerdeContext): Buffer | Uint8Array | Promise<Buffer | Uint8Array>
}

/**
 * Turns record bytes into an application value. May be async. null (no key, a tombstone) is
 * never passed: it stays null. A throw (or rejection) becomes a RecordDeserializationError with
 * the record's topic, partition and offset.
 */
export interface Deserializer<T> {
  deserialize(data: Buffer, context: SerdeContext): T | Promise<T>
}

export interface Serde<T> extends Serializer<T>, Deserializer<T> {}

/** Bytes as they are: the default on both sides (a Uint8Array is sent without a copy). */
const buffer: Serde<Buffer> = {
  serialize: (v) => v,
  deserialize: (b) => b,
}

/** UTF-8 text, as Java's StringSerializer / StringDeserializer. */
const string: Serde<string> = {
  serialize: (v) => {
    if (typeof v !== 'string') throw new TypeError(`the string serializer needs a string, got ${typeof v}`)
    return Buffer.from(v, 'utf8')
  },
  deserialize: (b) => b.toString('utf8'),
}

/** JSON text in UTF-8. A value that is not valid JSON throws the parser's SyntaxError. */
function json<T = unknown>(): Serde<T> {
  return {
    serialize: (v) => {
      const text = JSON.stringify(v)
      // JSON.stringify(undefined) and of functions yields undefined: there is nothing to send.
      if (text === undefined) throw new TypeError('the JSON serializer cannot encode undefined or a function')
      return Buffer.from(text, 'utf8')
    },
    deserialize: (b) => JSON.parse(b.toString('utf8')) as T,
  }
}

/** The built-in serdes; custom ones are any object with serialize() and/or deserialize(). */
export const serdes = { buffer, string, json } as const

/** Serializes a key or value; null/undefined stay null, the result is a Buffer (no copy when it already is one). */
export function serializeWith<T>(s: Serializer<T> | undefined, value: T | null | undefined, context: SerdeContext): Buffer | null | Promise<Buffer | null> {
  if (value === null || value === undefined) return null
  if (s === undefined) return toBuffer(value as unknown)
  const out = s.serialize(value, context)
  return out instanceof Promise ? out.then(toBuffer) : toBuffer(out)
}

function toBuffer(v: unknown): Buffer {
  if (Buffer.isBuffer(v)) return v
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength)
  if (typeof v === 'string') return Buffer.from(v, 'utf8')
  throw new TypeError(`a serializer must return a Buffer or Uint8Array, got ${v === null ? 'null' : typeof v}`)
}
