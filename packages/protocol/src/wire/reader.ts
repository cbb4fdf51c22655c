import { DecodeError } from '../errors/base.js'
import { uuidFromBytes } from './uuid.js'
import type { TaggedField } from './types.js'

/**
 * A bounds-checked big-endian reader. Every read checks the remaining length
 * first and throws a DecodeError naming the offset and what was missing, so
 * hostile input can only ever produce typed errors. Lengths read from the wire
 * are checked against the bytes actually present before anything is allocated.
 */
export class Reader {
  readonly buf: Buffer
  pos: number
  readonly end: number

  constructor(data: Uint8Array, offset = 0, end = data.length) {
    this.buf = Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength)
    this.pos = offset
    this.end = end
  }

  get remaining(): number {
    return this.end - this.pos
  }

  /** Throws unless `n` more bytes are present. */
  need(n: number, what: string): void {
    if (n > this.end - this.pos || n < 0) {
      throw new DecodeError(`truncated ${what}`, this.pos, n, this.end - this.pos)
    }
  }

  fail(message: string): never {
    throw new DecodeError(message, this.pos)
  }

  int8(): number {
    this.need(1, 'int8')
    return this.buf.readInt8(this.pos++)
  }

  bool(): boolean {
    this.need(1, 'bool')
    return this.buf[this.pos++] !== 0
  }

  uint8(): number {
    this.need(1, 'uint8')
    return this.buf[this.pos++]!
  }

  int16(): number {
    this.need(2, 'int16')
    const v = this.buf.readInt16BE(this.pos)
    this.pos += 2
    return v
  }

  uint16(): number {
    this.need(2, 'uint16')
    const v = this.buf.readUInt16BE(this.pos)
    this.pos += 2
    return v
  }

  int32(): number {
    this.need(4, 'int32')
    const v = this.buf.readInt32BE(this.pos)
    this.pos += 4
    return v
  }

  uint32(): number {
    this.need(4, 'uint32')
    const v = this.buf.readUInt32BE(this.pos)
    this.pos += 4
    return v
  }

  int64(): bigint {
    this.need(8, 'int64')
    const v = this.buf.readBigInt64BE(this.pos)
    this.pos += 8
    return v
  }

  float64(): number {
    this.need(8, 'float64')
    const v = this.buf.readDoubleBE(this.pos)
    this.pos += 8
    return v
  }

  /** Unsigned LEB128, at most 5 bytes (a 32-bit value), as Kafka's ByteUtils.readUnsignedVarint. */
  uvarint(): number {
    const buf = this.buf
    let pos = this.pos
    const end = this.end
    let result = 0
    let shift = 0
    for (let i = 0; i < 5; i++) {
      if (pos >= end) throw new DecodeError('truncated varint', pos, 1, 0)
      const b = buf[pos++]!
      if (i === 4 && b > 0x0f) {
        throw new DecodeError('varint is longer than 32 bits', this.pos)
      }
      result |= (b & 0x7f) << shift
      if ((b & 0x80) === 0) {
        this.pos = pos
        return result >>> 0
      }
      shift += 7
    }
    throw new DecodeError('varint is longer than 5 bytes', this.pos)
  }

  /** Zigzag varint. */
  varint(): number {
    const z = this.uvarint()
    return (z >>> 1) ^ -(z & 1)
  }

  /** Zigzag varlong, at most 10 bytes. */
  varlong(): bigint {
    const buf = this.buf
    let pos = this.pos
    const end = this.end
    // Fast path: values that fit in 28 bits (every offset / timestamp delta in a normal batch).
    let lo = 0
    let shift = 0
    for (let i = 0; i < 4; i++) {
      if (pos >= end) throw new DecodeError('truncated varlong', pos, 1, 0)
      const b = buf[pos++]!
      lo |= (b & 0x7f) << shift
      if ((b & 0x80) === 0) {
        this.pos = pos
        const z = lo >>> 0
        return BigInt((z >>> 1) ^ -(z & 1))
      }
      shift += 7
    }
    let z = BigInt(lo >>> 0)
    let bshift = 28n
    for (let i = 4; i < 10; i++) {
      if (pos >= end) throw new DecodeError('truncated varlong', pos, 1, 0)
      const b = buf[pos++]!
      if (i === 9 && b > 0x01) throw new DecodeError('varlong is longer than 64 bits', this.pos)
      z |= BigInt(b & 0x7f) << bshift
      if ((b & 0x80) === 0) {
        this.pos = pos
        return (z >> 1n) ^ -(z & 1n)
      }
      bshift += 7n
    }
    throw new DecodeError('varlong is longer than 10 bytes', this.pos)
  }

  uuid(): string {
    this.need(16, 'uuid')
    const v = uuidFromBytes(this.buf, this.pos)
    this.pos += 16
    return v
  }

  /** `n` bytes as a view into the input (no copy). */
  raw(n: number): Buffer {
    this.need(n, 'bytes')
    const v = this.buf.subarray(this.pos, this.pos + n)
    this.pos += n
    return v
  }

  private utf8(len: number): string {
    this.need(len, 'string')
    const v = this.buf.toString('utf8', this.pos, this.pos + len)
    this.pos += len
    return v
  }

  string(): string {
    const len = this.int16()
    if (len < 0) throw new DecodeError(`null where a string is required`, this.pos - 2)
    return this.utf8(len)
  }

  nullableString(): string | null {
    const len = this.int16()
    if (len < 0) {
      if (len !== -1) throw new DecodeError(`invalid string length ${len}`, this.pos - 2)
      return null
    }
    return this.utf8(len)
  }

  compactString(): string {
    const len = this.uvarint() - 1
    if (len < 0) throw new DecodeError(`null where a string is required`, this.pos - 1)
    if (len > 0x7fff) throw new DecodeError(`string length ${len} exceeds 32767`, this.pos - 1)
    return this.utf8(len)
  }

  compactNullableString(): string | null {
    const len = this.uvarint() - 1
    if (len < 0) return null
    if (len > 0x7fff) throw new DecodeError(`string length ${len} exceeds 32767`, this.pos - 1)
    return this.utf8(len)
  }

  bytes(): Buffer {
    const len = this.int32()
    if (len < 0) throw new DecodeError(`null where bytes are required`, this.pos - 4)
    return this.raw(len)
  }

  nullableBytes(): Buffer | null {
    const len = this.int32()
    if (len < 0) {
      if (len !== -1) throw new DecodeError(`invalid bytes length ${len}`, this.pos - 4)
      return null
    }
    return this.raw(len)
  }

  compactBytes(): Buffer {
    const len = this.uvarint() - 1
    if (len < 0) throw new DecodeError(`null where bytes are required`, this.pos - 1)
    return this.raw(len)
  }

  compactNullableBytes(): Buffer | null {
    const len = this.uvarint() - 1
    if (len < 0) return null
    return this.raw(len)
  }

  /**
   * An array length. Returns -1 for null. Each element takes at least one byte on
   * the wire, so a count larger than what is left is rejected before the caller
   * allocates anything for it.
   */
  arrayLength(compact: boolean): number {
    const at = this.pos
    let n: number
    if (compact) {
      n = this.uvarint() - 1
    } else {
      n = this.int32()
      if (n < -1) throw new DecodeError(`invalid array length ${n}`, at)
    }
    if (n > this.end - this.pos) {
      throw new DecodeError(`array of ${n} elements cannot fit`, at, n, this.end - this.pos)
    }
    return n
  }

  /**
   * A tagged-field section. `known` decodes the tags the caller understands (with a
   * reader bounded to that field) and returns false for the others, which are kept.
   */
  taggedFields(known?: (tag: number, r: Reader) => boolean): TaggedField[] | undefined {
    const count = this.uvarint()
    if (count === 0) return undefined
    if (count > this.end - this.pos) {
      throw new DecodeError(`tagged field count ${count} cannot fit`, this.pos, count, this.end - this.pos)
    }
    let unknown: TaggedField[] | undefined
    let last = -1
    for (let i = 0; i < count; i++) {
      const tag = this.uvarint()
      if (tag <= last) throw new DecodeError(`tagged fields out of order (tag ${tag} after ${last})`, this.pos)
      last = tag
      const size = this.uvarint()
      this.need(size, `tagged field ${tag}`)
      const fieldEnd = this.pos + size
      if (known !== undefined) {
        const sub = new Reader(this.buf, this.pos, fieldEnd)
        if (known(tag, sub)) {
          this.pos = fieldEnd
          continue
        }
      }
      ;(unknown ??= []).push({ tag, data: Buffer.from(this.buf.subarray(this.pos, fieldEnd)) })
      this.pos = fieldEnd
    }
    return unknown
  }
}
