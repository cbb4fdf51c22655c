import { type EncodeRecordBatchInput, encodeRecordBatch } from '@tidelog/protocol'

export interface TestRecord {
  value: string | Buffer
  key?: string | Buffer | null
  timestamp?: number
}

/**
 * A magic-2 batch of `records` (or of `n` generated ones) with baseOffset 0, as
 * a producer sends it, built with the codec's encodeRecordBatch.
 */
export function makeBatch(
  records: readonly TestRecord[] | number,
  opts: { baseTimestamp?: number; valueSize?: number } & Omit<EncodeRecordBatchInput, 'records'> = {},
): Buffer {
  const { baseTimestamp, valueSize, ...rest } = opts
  const list: TestRecord[] =
    typeof records === 'number'
      ? Array.from({ length: records }, (_, i) => ({
          value: valueSize !== undefined ? Buffer.alloc(valueSize, i & 0xff) : `value-${i}`,
        }))
      : [...records]
  const ts = baseTimestamp ?? Date.now()
  return encodeRecordBatch({
    ...rest,
    now: ts,
    records: list.map((r) => ({ key: r.key ?? null, value: r.value, timestamp: r.timestamp ?? ts })),
  })
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
