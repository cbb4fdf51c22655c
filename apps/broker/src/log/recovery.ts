import { InvalidRecordError, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, TidelogError, readBatchHeader, validateRecordBatch } from '@tidelog/protocol'
import { BATCH_LENGTH_AT } from './format.js'
import type { LogSegment } from './segment.js'

// Recovery reads segments sequentially in large chunks; one buffer serves all
// (recovery is synchronous, at startup).
const CHUNK = 1024 * 1024
let chunkBuf: Buffer | undefined

export interface SegmentRecovery {
  /** Bytes cut off the end of the segment. */
  truncatedBytes: number
  /** Why the scan stopped early, when it did. */
  reason?: string
}

/**
 * Re-reads a segment from its first byte, checking each batch as a produce
 * would be checked (length, magic, CRC32C, offset range; validateRecordBatch)
 * and that its offsets continue where the previous batch's ended. The segment
 * is truncated at the first byte that fails, and its indexes are rebuilt from
 * the batches that passed.
 */
export function recoverSegment(seg: LogSegment): SegmentRecovery {
  const buf = (chunkBuf ??= Buffer.allocUnsafe(CHUNK))
  seg.resetIndexes()
  const end = seg.size
  let pos = 0
  // Window of the file held in `buf`: [winStart, winStart + winLen).
  let winStart = 0
  let winLen = 0
  let win = buf.subarray(0, 0)
  let reason: string | undefined
  const fill = (at: number): void => {
    const want = Math.min(CHUNK, end - at)
    winStart = at
    winLen = seg.readIntoSync(buf, 0, want, at)
    win = buf.subarray(0, winLen)
  }

  while (pos < end) {
    if (end - pos < LOG_OVERHEAD) {
      reason = `${end - pos} trailing byte(s) shorter than a batch header`
      break
    }
    if (pos < winStart || pos + LOG_OVERHEAD > winStart + winLen) fill(pos)
    const size = LOG_OVERHEAD + buf.readInt32BE(pos - winStart + BATCH_LENGTH_AT)
    if (size < RECORD_BATCH_OVERHEAD) {
      reason = `impossible batch length ${size - LOG_OVERHEAD}`
      break
    }
    if (pos + size > end) {
      reason = `batch of ${size} bytes runs past the end of the file`
      break
    }
    let view: Buffer
    let at: number
    if (size <= CHUNK) {
      if (pos + size > winStart + winLen) fill(pos)
      view = win
      at = pos - winStart
    } else {
      view = seg.readSync(pos, size)
      at = 0
    }
    let baseOffset: number
    let lastOffset: number
    let maxTimestamp: number
    try {
      const h = storedBatchHeader(view, at)
      baseOffset = Number(h.baseOffset)
      lastOffset = baseOffset + h.lastOffsetDelta
      maxTimestamp = Number(h.maxTimestamp)
    } catch (err) {
      if (!(err instanceof TidelogError)) throw err
      reason = err.message
      break
    }
    // The log cleaner leaves gaps between batches, never an overlap.
    if (baseOffset < seg.nextOffset) {
      reason = `batch starts at offset ${baseOffset}, below ${seg.nextOffset}`
      break
    }
    seg.track(pos, size, baseOffset, lastOffset, maxTimestamp)
    pos += size
  }

  const truncatedBytes = end - pos
  if (truncatedBytes > 0) seg.truncateTo(pos)
  seg.persistIndexes()
  return reason === undefined ? { truncatedBytes } : { truncatedBytes, reason }
}

/**
 * validateRecordBatch, except that a batch the log cleaner shrank is sound: it
 * keeps its offset range and CRC but holds fewer records than the range (none,
 * for the kept last batch of a producer), as Kafka's cleaned batches do.
 */
function storedBatchHeader(view: Buffer, at: number): ReturnType<typeof readBatchHeader> {
  try {
    return validateRecordBatch(view, at)
  } catch (err) {
    // The CRC and layout checks come first, so only the count checks fail here.
    if (!(err instanceof InvalidRecordError)) throw err
    const h = readBatchHeader(view, at)
    if (h.lastOffsetDelta < 0 || h.recordCount < 0 || h.recordCount > h.lastOffsetDelta + 1) throw err
    return h
  }
}
