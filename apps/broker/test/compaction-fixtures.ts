import { join } from 'node:path'
import { decodeRecordBatches } from '@tidelog/protocol'
import { type LogConfig, PartitionLog } from '../src/log/index.js'
import { cleanLog, planCleaning, type CleanOptions, type CleanResult } from '../src/log/compaction/clean-log.js'
import { makeBatch } from './helpers/batches.js'

// Shared by the compaction tests: a compacted log on disk, keyed writes, and
// what a consumer reading from the beginning would see.

export const COMPACT: Partial<LogConfig> = { cleanupCompact: true, cleanupDelete: false, minCleanableDirtyRatio: 0.01, segmentBytes: 1 << 30 }

export function openCompacted(dir: string, config: Partial<LogConfig> = {}, extra: Partial<Parameters<typeof PartitionLog.open>[0]> = {}): PartitionLog {
  return PartitionLog.open({ dir: join(dir, 'c-0'), topic: 'c', partition: 0, config: { ...COMPACT, ...config }, clean: true, ...extra })
}

/** Appends one batch of (key, value) records; a null value is a tombstone. Returns the first offset. */
export function put(log: PartitionLog, records: [string | null, string | null][], opts: Parameters<typeof makeBatch>[1] = {}, now?: number): number {
  const buf = makeBatch(records.map(([key, value]) => ({ key, value: value as string })), opts)
  return log.append(buf, now !== undefined ? { now } : {}).baseOffset
}

export interface Seen {
  offset: number
  key: string | null
  value: string | null
}

/** Every record from the log start, as a read_uncommitted consumer sees it (control batches skipped). */
export async function readAll(log: PartitionLog): Promise<Seen[]> {
  const out: Seen[] = []
  let offset = log.logStartOffset
  while (offset < log.logEndOffset) {
    const r = await log.read(offset, 1 << 20)
    if (r.records.length === 0) break
    let next = offset
    for (const b of decodeRecordBatches(r.records)) {
      next = Number(b.baseOffset) + b.lastOffsetDelta + 1
      if (b.isControl) continue
      for (const rec of b) {
        out.push({ offset: Number(rec.offset), key: rec.key === null ? null : Buffer.from(rec.key).toString(), value: rec.value === null ? null : Buffer.from(rec.value).toString() })
      }
    }
    offset = next
  }
  return out
}

/** One cleaner pass over the log from `firstDirty`, as the LogCleaner runs it. */
export async function cleanOnce(log: PartitionLog, firstDirty = 0, opts: CleanOptions = {}): Promise<CleanResult | undefined> {
  const plan = planCleaning(log, firstDirty, opts.now ?? Date.now())
  return cleanLog(log, plan, opts)
}
