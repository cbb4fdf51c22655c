import { LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, encodeRecordBatch } from '@tidelog/protocol'
import { ATTRIBUTES_AT, BATCH_LENGTH_AT } from './format.js'

/** attributes bit 4: the batch belongs to a transaction (KIP-98). */
export const TRANSACTIONAL_BIT = 0x10
/** attributes bit 5: a control batch (transaction markers). */
export const CONTROL_BIT = 0x20

/** Kafka's ControlRecordType ids. */
export const CONTROL_ABORT = 0
export const CONTROL_COMMIT = 1

export function isTransactionalAt(buf: Buffer, at: number): boolean {
  return (buf.readInt16BE(at + ATTRIBUTES_AT) & TRANSACTIONAL_BIT) !== 0
}

export function isControlAt(buf: Buffer, at: number): boolean {
  return (buf.readInt16BE(at + ATTRIBUTES_AT) & CONTROL_BIT) !== 0
}

/**
 * One end-transaction marker as Kafka's EndTransactionMarker writes it: a
 * transactional control batch of the producer with no sequence, holding one
 * record whose key is (version 0, type) and value (version 0, coordinator epoch).
 */
export function encodeTxnMarkerBatch(m: { producerId: number; producerEpoch: number; commit: boolean; coordinatorEpoch: number }, now: number): Buffer {
  const key = Buffer.alloc(4)
  key.writeInt16BE(0, 0)
  key.writeInt16BE(m.commit ? CONTROL_COMMIT : CONTROL_ABORT, 2)
  const value = Buffer.alloc(6)
  value.writeInt16BE(0, 0)
  value.writeInt32BE(m.coordinatorEpoch, 2)
  return encodeRecordBatch({
    records: [{ key, value, timestamp: now }],
    producerId: BigInt(m.producerId),
    producerEpoch: m.producerEpoch,
    baseSequence: -1,
    isTransactional: true,
    isControl: true,
    now,
  })
}

/**
 * The type and coordinator epoch of the marker in a stored control batch
 * (uncompressed, one record), or undefined when it holds none: Kafka treats
 * an empty control batch as a transaction cleaned from the log.
 */
export function readTxnMarker(batch: Buffer): { commit: boolean; coordinatorEpoch: number } | undefined {
  const end = Math.min(batch.length, LOG_OVERHEAD + batch.readInt32BE(BATCH_LENGTH_AT))
  // Markers are never compressed (Kafka writes them plain); anything else is not one.
  if ((batch.readInt16BE(ATTRIBUTES_AT) & 0x07) !== 0) return undefined
  if (batch.readInt32BE(RECORD_BATCH_OVERHEAD - 4) < 1) return undefined
  // Record: length, attributes int8, timestamp delta, offset delta (varints), key length, key.
  let p = RECORD_BATCH_OVERHEAD
  const skipVarint = (): number => {
    let x = 0
    for (let shift = 0; shift < 35 && p < end; shift += 7) {
      const c = batch[p++]!
      x |= (c & 0x7f) << shift
      if (c < 0x80) return (x >>> 1) ^ -(x & 1)
    }
    return -2
  }
  skipVarint()
  p++
  skipVarint()
  skipVarint()
  const keyLen = skipVarint()
  if (keyLen < 4 || p + keyLen > end) return undefined
  const type = batch.readInt16BE(p + 2)
  p += keyLen
  const valueLen = skipVarint()
  const coordinatorEpoch = valueLen >= 6 && p + valueLen <= end ? batch.readInt32BE(p + 2) : -1
  if (type !== CONTROL_ABORT && type !== CONTROL_COMMIT) return undefined
  return { commit: type === CONTROL_COMMIT, coordinatorEpoch }
}
