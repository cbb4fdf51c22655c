import { decodeRecordBatchesAsync } from '@tidelog/protocol'
import { OffsetOutOfRangeError } from '../log/errors.js'
import type { PartitionLog } from '../log/index.js'

/** One record as the message browser shows it. */
export interface BrowsedRecord {
  offset: number
  timestamp: number
  key: EncodedBytes | null
  value: EncodedBytes | null
  headers: { key: string; value: EncodedBytes | null }[]
}

/**
 * Bytes for the browser: `text` when they are valid UTF-8 (and `json` true when that
 * text parses as JSON), else base64. Decoding choices stay in the page; the bytes are
 * never altered.
 */
export interface EncodedBytes {
  size: number
  text?: string
  json?: boolean
  base64?: string
  /** Only the first MAX_SHOWN_BYTES were sent. */
  truncated?: boolean
}

export interface BrowseResult {
  records: BrowsedRecord[]
  /** Where the next page (or the live tail) continues. */
  nextOffset: number
  logStartOffset: number
  highWatermark: number
  lastStableOffset: number
}

/** As a consumer's isolation.level: read_committed stops at the last stable offset and drops aborted transactions (KIP-98). */
export type Isolation = 'read_uncommitted' | 'read_committed'

export const MAX_RECORDS = 500
// Per read and per value: a page of a topic holding 50 MB records must stay small.
const READ_BYTES = 1024 * 1024
const MAX_READS = 16
const MAX_SHOWN_BYTES = 64 * 1024
// What one page may carry in keys, values and headers (before JSON and base64): 500 records of
// large values stop here, so a page stays a few MiB however big the records are.
export const MAX_PAGE_BYTES = 4 * 1024 * 1024

const utf8 = new TextDecoder('utf-8', { fatal: true })

const shownSize = (b: EncodedBytes | null): number => (b === null ? 0 : Math.min(b.size, MAX_SHOWN_BYTES))

function encode(b: Buffer | null): EncodedBytes | null {
  if (b === null) return null
  const shown = b.length > MAX_SHOWN_BYTES ? b.subarray(0, MAX_SHOWN_BYTES) : b
  const out: EncodedBytes = { size: b.length }
  if (shown !== b) out.truncated = true
  try {
    out.text = utf8.decode(shown)
    if (shown === b) {
      try {
        JSON.parse(out.text)
        out.json = true
      } catch {
        // Not JSON: shown as text.
      }
    }
  } catch {
    out.base64 = shown.toString('base64')
  }
  return out
}

/**
 * Records of one partition from `offset` (clamped into the log), at most `limit`,
 * up to the high watermark. Reads are the log's own async, size-bounded reads, so a
 * huge partition is never loaded whole and the event loop is never held by one page.
 * Control batches (transaction markers) are skipped, as a consumer skips them.
 */
export async function browse(log: PartitionLog, offset: number, limit: number, isolation: Isolation = 'read_uncommitted'): Promise<BrowseResult> {
  const n = Math.max(1, Math.min(MAX_RECORDS, limit))
  const start = log.logStartOffset
  const committed = isolation === 'read_committed'
  const hw = committed ? log.lastStableOffset : log.highWatermark
  let next = Math.min(Math.max(offset, start), hw)
  const records: BrowsedRecord[] = []
  let pageBytes = 0
  const full = (): boolean => records.length >= n || pageBytes >= MAX_PAGE_BYTES
  for (let reads = 0; reads < MAX_READS && !full() && next < hw; reads++) {
    let bytes: Buffer
    try {
      bytes = (await log.read(next, READ_BYTES, true, hw)).records
    } catch (err) {
      // Retention moved the start past us between the check and the read: continue from there.
      if (err instanceof OffsetOutOfRangeError) {
        next = Math.max(next, log.logStartOffset)
        continue
      }
      throw err
    }
    if (bytes.length === 0) break
    const batches = await decodeRecordBatchesAsync(bytes)
    const last = batches.at(-1)
    // The index names each aborted transaction's producer and offset range, marker included.
    const aborted = committed && last !== undefined ? log.abortedTransactions(next, Number(last.baseOffset) + last.lastOffsetDelta + 1) : []
    let progressed = false
    for (const batch of batches) {
      const base = Number(batch.baseOffset)
      const batchEnd = base + batch.lastOffsetDelta + 1
      const abortedBatch = batch.isTransactional && aborted.some((a) => BigInt(a.producerId) === batch.producerId && a.firstOffset <= base && base <= a.lastOffset)
      if (batch.isControl || abortedBatch) {
        next = Math.max(next, batchEnd)
        progressed = true
        continue
      }
      for (const r of batch) {
        const o = Number(r.offset)
        if (o < next) continue
        if (full()) break
        const record: BrowsedRecord = {
          offset: o,
          timestamp: Number(r.timestamp),
          key: encode(r.key),
          value: encode(r.value),
          headers: r.headers.map((h) => ({ key: h.key, value: encode(h.value) })),
        }
        pageBytes += shownSize(record.key) + shownSize(record.value)
        for (const h of record.headers) pageBytes += h.key.length + shownSize(h.value)
        records.push(record)
        next = o + 1
        progressed = true
      }
      if (full()) break
      if (next < batchEnd) {
        next = batchEnd
        progressed = true
      }
    }
    if (!progressed) break
  }
  return { records, nextOffset: next, logStartOffset: log.logStartOffset, highWatermark: log.highWatermark, lastStableOffset: log.lastStableOffset }
}

/** The first offset whose batch holds a timestamp at or after `timestamp` (ListOffsets by time), or the high watermark. */
export async function offsetForTime(log: PartitionLog, timestamp: number): Promise<number> {
  const found = await log.findBatchByTimestamp(timestamp)
  if (found === undefined) return log.highWatermark
  const batches = await decodeRecordBatchesAsync(found.batch)
  for (const b of batches) for (const r of b) if (Number(r.timestamp) >= timestamp) return Number(r.offset)
  return found.lastOffset + 1
}
