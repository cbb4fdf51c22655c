import { Writer, crc32c } from '@tidelog/protocol'

export interface TestRecord {
  value: string | Buffer
  key?: string | Buffer | null
  timestamp?: number
}

/**
 * An uncompressed magic-2 batch of `records` (baseOffset 0, as a producer sends
 * it). Built by hand from the KIP-98 layout so the log tests do not depend on
 * the codec's record encoder.
 */
export function makeBatch(records: readonly TestRecord[] | number, opts: { baseTimestamp?: number; valueSize?: number } = {}): Buffer {
  const list: TestRecord[] =
    typeof records === 'number'
      ? Array.from({ length: records }, (_, i) => ({
          value: opts.valueSize !== undefined ? Buffer.alloc(opts.valueSize, i & 0xff) : `value-${i}`,
        }))
      : [...records]
  const baseTs = opts.baseTimestamp ?? list[0]?.timestamp ?? Date.now()
  let maxTs = baseTs
  const body = new Writer()
  list.forEach((r, i) => {
    const ts = r.timestamp ?? baseTs
    if (ts > maxTs) maxTs = ts
    const rec = new Writer()
    rec.int8(0)
    rec.varlong(BigInt(ts - baseTs))
    rec.varint(i)
    const key = r.key === undefined || r.key === null ? null : Buffer.from(r.key)
    if (key === null) rec.varint(-1)
    else rec.varint(key.length).raw(key)
    const value = Buffer.from(r.value)
    rec.varint(value.length).raw(value)
    rec.varint(0)
    const bytes = rec.finish()
    body.varint(bytes.length).raw(bytes)
  })
  const records_ = body.finish()
  const w = new Writer()
  w.int64(0n)
  w.int32(49 + records_.length) // batchLength: everything after itself
  w.int32(-1) // partitionLeaderEpoch
  w.int8(2)
  w.uint32(0) // crc, patched below
  w.int16(0) // attributes
  w.int32(list.length - 1)
  w.int64(BigInt(baseTs))
  w.int64(BigInt(maxTs))
  w.int64(-1n)
  w.int16(-1)
  w.int32(-1)
  w.int32(list.length)
  w.raw(records_)
  const buf = w.finish()
  buf.writeUInt32BE(crc32c(buf, 21, buf.length), 17)
  return Buffer.from(buf)
}

/** Base offsets of the batches in `buf`. */
export function batchOffsets(buf: Buffer): number[] {
  const out: number[] = []
  for (let p = 0; p + 12 <= buf.length; ) {
    out.push(Number(buf.readBigInt64BE(p)))
    p += 12 + buf.readInt32BE(p + 8)
  }
  return out
}
