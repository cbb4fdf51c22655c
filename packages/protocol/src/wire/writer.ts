import { EncodeError } from '../errors/base.js'
import { uuidToBytes } from './uuid.js'
import type { TaggedField } from './types.js'

const INT16_MAX = 0x7fff

/**
 * A growable big-endian writer. One instance is reused across a whole message so
 * that nested structs never allocate their own buffers; `finish()` hands out a
 * view of the bytes written so far.
 */
export class Writer {
  buf: Buffer
  pos = 0

  constructor(initialSize = 256) {
    this.buf = Buffer.allocUnsafe(initialSize)
  }

  /** Make room for `n` more bytes. */
  ensure(n: number): void {
    const need = this.pos + n
    if (need <= this.buf.length) return
    let size = this.buf.length * 2
    while (size < need) size *= 2
    const next = Buffer.allocUnsafe(size)
    this.buf.copy(next, 0, 0, this.pos)
    this.buf = next
  }

  /** The bytes written so far (a view, not a copy). */
  finish(): Buffer {
    return this.buf.subarray(0, this.pos)
  }

  int8(v: number): this {
    this.ensure(1)
    this.buf[this.pos++] = v & 0xff
    return this
  }

  bool(v: boolean): this {
    return this.int8(v ? 1 : 0)
  }

  int16(v: number): this {
    this.ensure(2)
    this.buf.writeInt16BE(v, this.pos)
    this.pos += 2
    return this
  }

  uint16(v: number): this {
    this.ensure(2)
    this.buf.writeUInt16BE(v, this.pos)
    this.pos += 2
    return this
  }

  int32(v: number): this {
    this.ensure(4)
    this.buf.writeInt32BE(v, this.pos)
    this.pos += 4
    return this
  }

  uint32(v: number): this {
    this.ensure(4)
    this.buf.writeUInt32BE(v, this.pos)
    this.pos += 4
    return this
  }

  int64(v: bigint): this {
    this.ensure(8)
    this.buf.writeBigInt64BE(v, this.pos)
    this.pos += 8
    return this
  }

  float64(v: number): this {
    this.ensure(8)
    this.buf.writeDoubleBE(v, this.pos)
    this.pos += 8
    return this
  }

  /** Unsigned LEB128 of a 32-bit value. */
  uvarint(v: number): this {
    this.ensure(5)
    const buf = this.buf
    let pos = this.pos
    v >>>= 0
    while (v > 0x7f) {
      buf[pos++] = (v & 0x7f) | 0x80
      v >>>= 7
    }
    buf[pos++] = v
    this.pos = pos
    return this
  }

  /** Zigzag varint of a signed 32-bit value. */
  varint(v: number): this {
    return this.uvarint(((v << 1) ^ (v >> 31)) >>> 0)
  }

  /** Zigzag varlong of a signed 64-bit value. */
  varlong(v: bigint): this {
    this.ensure(10)
    let z = BigInt.asUintN(64, (v << 1n) ^ (v >> 63n))
    const buf = this.buf
    let pos = this.pos
    while (z > 0x7fn) {
      buf[pos++] = Number(z & 0x7fn) | 0x80
      z >>= 7n
    }
    buf[pos++] = Number(z)
    this.pos = pos
    return this
  }

  uuid(v: string): this {
    this.ensure(16)
    this.buf.set(uuidToBytes(v), this.pos)
    this.pos += 16
    return this
  }

  raw(bytes: Uint8Array): this {
    this.ensure(bytes.length)
    this.buf.set(bytes, this.pos)
    this.pos += bytes.length
    return this
  }

  /** Writes a UTF-8 string body of a known byte length (no length prefix). */
  private utf8(s: string, len: number): void {
    this.ensure(len)
    this.buf.write(s, this.pos, len, 'utf8')
    this.pos += len
  }

  string(s: string): this {
    const len = Buffer.byteLength(s, 'utf8')
    if (len > INT16_MAX) throw new EncodeError(`string of ${len} bytes is longer than ${INT16_MAX}`)
    this.int16(len)
    this.utf8(s, len)
    return this
  }

  nullableString(s: string | null | undefined): this {
    if (s == null) return this.int16(-1)
    return this.string(s)
  }

  compactString(s: string): this {
    const len = Buffer.byteLength(s, 'utf8')
    if (len > INT16_MAX) throw new EncodeError(`string of ${len} bytes is longer than ${INT16_MAX}`)
    this.uvarint(len + 1)
    this.utf8(s, len)
    return this
  }

  compactNullableString(s: string | null | undefined): this {
    if (s == null) return this.uvarint(0)
    return this.compactString(s)
  }

  bytes(b: Uint8Array): this {
    this.int32(b.length)
    return this.raw(b)
  }

  nullableBytes(b: Uint8Array | null | undefined): this {
    if (b == null) return this.int32(-1)
    return this.bytes(b)
  }

  compactBytes(b: Uint8Array): this {
    this.uvarint(b.length + 1)
    return this.raw(b)
  }

  compactNullableBytes(b: Uint8Array | null | undefined): this {
    if (b == null) return this.uvarint(0)
    return this.compactBytes(b)
  }

  /** Array length prefix: int32 (classic) or unsigned varint length + 1 (compact). */
  arrayLength(n: number, compact: boolean): this {
    return compact ? this.uvarint(n + 1) : this.int32(n)
  }

  nullArrayLength(compact: boolean): this {
    return compact ? this.uvarint(0) : this.int32(-1)
  }

  /**
   * A tagged-field section: known fields are written by `writeKnown` (which pushes
   * `[tag, bytes]` pairs), unknown ones kept from decoding are merged in tag order.
   */
  taggedFields(fields: TaggedField[] | undefined): this {
    if (fields === undefined || fields.length === 0) {
      return this.uvarint(0)
    }
    const sorted = fields.length > 1 ? [...fields].sort((a, b) => a.tag - b.tag) : fields
    this.uvarint(sorted.length)
    for (const f of sorted) {
      this.uvarint(f.tag)
      this.uvarint(f.data.length)
      this.raw(f.data)
    }
    return this
  }

  /** Reserve 4 bytes for a length or CRC written later with `patchInt32`. */
  reserveInt32(): number {
    this.ensure(4)
    const at = this.pos
    this.pos += 4
    return at
  }

  patchInt32(at: number, v: number): void {
    this.buf.writeInt32BE(v, at)
  }

  patchUInt32(at: number, v: number): void {
    this.buf.writeUInt32BE(v, at)
  }
}

/** Bytes an unsigned varint takes. */
export function uvarintSize(v: number): number {
  v >>>= 0
  let n = 1
  while (v > 0x7f) {
    n++
    v >>>= 7
  }
  return n
}

/** Bytes a zigzag varint takes. */
export function varintSize(v: number): number {
  return uvarintSize(((v << 1) ^ (v >> 31)) >>> 0)
}
