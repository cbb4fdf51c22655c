import { mkdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { LOG_OVERHEAD } from '@tidelog/protocol'
import { readTxnMarker } from '../control-batch.js'
import { BATCH_LENGTH_AT, LAST_OFFSET_DELTA_AT, MAX_TIMESTAMP_AT, readInt64 } from '../format.js'
import { type LogFileSystem, fsyncDirAsync, rmAsync } from '../file-system.js'
import type { PartitionLog } from '../partition-log.js'
import { recoverSegment } from '../recovery.js'
import { LogSegment } from '../segment.js'
import type { AbortedTxn } from '../txn-index.js'
import { parseRecords, readStoredBatch, rebuildBatch, recordsSection, type StoredBatch } from './records.js'
import { Pacer, segmentBatches } from './segment-reader.js'
import { DELETED_SUFFIX, MANIFEST, type SwapManifest, type SwapStep, cleanedDirName, moveIntoPlace, swapDirName } from './swap.js'
import { TxnTracker } from './txn-tracker.js'

/** Kafka's log.cleaner.dedupe.buffer.size default; an entry of Kafka's offset map takes 24 bytes. */
export const DEFAULT_DEDUPE_BUFFER_SIZE = 128 * 1024 * 1024
const MAP_ENTRY_BYTES = 24
const WRITE_CHUNK = 256 * 1024

/** What the cleaner measures of one log before choosing it (Kafka's LogToClean). */
export interface CleanPlan {
  firstDirty: number
  /** The non-active segments below the first uncleanable offset that hold offsets at or past firstDirty. */
  dirty: LogSegment[]
  cleanBytes: number
  dirtyBytes: number
  /** dirty / (clean + dirty) */
  ratio: number
  /** max.compaction.lag.ms has passed for the oldest dirty record (KIP-354). */
  needNow: boolean
}

export interface CleanOptions {
  now?: number
  dedupeBufferSize?: number
  /** Called after each swap step; a test throws here to stop the cleaner as a crash would. */
  fault?: (step: SwapStep, base: number) => void
  pacer?: Pacer
  /** The cleaner is shutting down: give up at the next slice. */
  stopping?: () => boolean
}

export interface CleanResult {
  /** The new first dirty offset (the cleaner checkpoint). */
  endOffset: number
  segmentsCleaned: number
  bytesRead: number
  bytesWritten: number
  recordsRemoved: number
}

/**
 * Where the dirty section of a log starts and ends, as Kafka's
 * LogCleanerManager measures it: from the checkpointed first dirty offset to
 * the first uncleanable one, which is the lowest of the active segment's base
 * offset, the last stable offset (an open transaction's data is never
 * cleaned) and the first segment holding a record younger than
 * min.compaction.lag.ms. Whole segments only: one that holds the uncleanable
 * offset waits for the next pass.
 */
export function planCleaning(log: PartitionLog, checkpoint: number, now: number): CleanPlan {
  const c = log.config
  const firstDirty = checkpoint > log.logEndOffset || checkpoint < log.logStartOffset ? log.logStartOffset : checkpoint
  let uncleanable = Math.min(log.active.baseOffset, log.lastStableOffset)
  const dirty: LogSegment[] = []
  let cleanBytes = 0
  for (const seg of log.segments) {
    if (seg === log.active) break
    if (seg.nextOffset <= firstDirty) {
      if (seg.nextOffset > log.logStartOffset) cleanBytes += seg.size
      continue
    }
    if (c.minCompactionLagMs > 0 && seg.maxTimestamp > now - c.minCompactionLagMs) uncleanable = Math.min(uncleanable, seg.baseOffset)
    if (seg.nextOffset > uncleanable) break
    dirty.push(seg)
  }
  let dirtyBytes = 0
  for (const s of dirty) dirtyBytes += s.size
  const first = dirty[0]
  const oldest = first === undefined ? -1 : first.firstBatchTimestamp >= 0 ? first.firstBatchTimestamp : first.maxTimestamp
  const needNow = Number.isFinite(c.maxCompactionLagMs) && oldest >= 0 && now - oldest > c.maxCompactionLagMs
  const total = cleanBytes + dirtyBytes
  return { firstDirty, dirty, cleanBytes, dirtyBytes, ratio: total === 0 ? 0 : dirtyBytes / total, needNow }
}

/** Whether Kafka's cleaner would pick the log: dirty past min.cleanable.dirty.ratio, or overdue by max.compaction.lag.ms. */
export function isCleanable(plan: CleanPlan, log: PartitionLog): boolean {
  if (!log.config.cleanupCompact || plan.dirtyBytes === 0) return false
  return plan.needNow || plan.ratio > log.config.minCleanableDirtyRatio
}

class Aborted extends Error {}

function checkOpen(log: PartitionLog, stopping: CleanOptions['stopping']): void {
  if (log.isClosed || log.isOffline || stopping?.() === true) throw new Aborted(`${log.topic}-${log.partition} closed while cleaning`)
}

function abortedTxnsOf(segments: readonly LogSegment[], fromMarker: number): AbortedTxn[] {
  const out: AbortedTxn[] = []
  for (const s of segments) for (const t of s.txnIndex.entries) if (t.lastOffset >= fromMarker) out.push(t)
  return out
}

/**
 * The latest offset of every key in the dirty segments (Kafka's buildOffsetMap),
 * skipping aborted transactional data and markers. Stops at a segment boundary
 * once the map holds dedupeBufferSize / 24 keys, as Kafka's fixed-size map does.
 */
async function buildOffsetMap(log: PartitionLog, plan: CleanPlan, cap: number, pacer: Pacer, stopping: CleanOptions['stopping']): Promise<{ map: Map<string, number>; endOffset: number; bytesRead: number }> {
  const map = new Map<string, number>()
  const tracker = new TxnTracker(abortedTxnsOf(log.segments, plan.dirty[0]!.baseOffset))
  let endOffset = plan.firstDirty
  let bytesRead = 0
  for (const seg of plan.dirty) {
    if (map.size >= cap) break
    for await (const raw of segmentBatches(seg)) {
      checkOpen(log, stopping)
      await pacer.tick()
      bytesRead += raw.length
      const b = readStoredBatch(raw)
      if (b.isControl) {
        tracker.onMarker(b.producerId, b.lastOffset, b.recordCount > 0 ? readTxnMarker(raw)?.commit : undefined, [])
        continue
      }
      if (b.isTransactional && tracker.onDataBatch(b.producerId, b.lastOffset)) continue
      for (const r of parseRecords(b, await recordsSection(b))) if (r.key !== undefined) map.set(r.key, r.offset)
    }
    endOffset = Math.max(endOffset, seg.nextOffset)
  }
  return { map, endOffset, bytesRead }
}

/** Consecutive segments cleaned into one: at most segment.bytes together, offsets within an int32 of the first. */
function groupSegments(segments: readonly LogSegment[], maxBytes: number): LogSegment[][] {
  const groups: LogSegment[][] = []
  let cur: LogSegment[] = []
  let bytes = 0
  for (const s of segments) {
    const first = cur[0]
    if (first !== undefined && (bytes + s.size > maxBytes || s.lastOffset - first.baseOffset > 0x7fffffff)) {
      groups.push(cur)
      cur = []
      bytes = 0
    }
    cur.push(s)
    bytes += s.size
  }
  if (cur.length > 0) groups.push(cur)
  return groups
}

interface FilterContext {
  map: Map<string, number>
  tracker: TxnTracker
  keptTxns: AbortedTxn[]
  lastBatches: Map<number, number>
  now: number
  deleteRetentionMs: number
}

/**
 * One batch through Kafka's cleaner rules: the batch as it is, a smaller one,
 * an empty one (the last batch of a live producer keeps its header so its
 * sequence survives), or nothing. A record stays when it is its key's latest
 * and is a value, or a tombstone whose delete horizon has not passed; the
 * first cleaning that keeps a tombstone (or an emptied transaction's marker)
 * stamps the batch with the horizon now + delete.retention.ms (KIP-534).
 */
async function filterBatch(b: StoredBatch, raw: Buffer, ctx: FilterContext): Promise<{ out: Buffer | undefined; removed: number }> {
  if (b.isControl) {
    const commit = b.recordCount > 0 ? readTxnMarker(raw)?.commit : undefined
    const canDiscard = ctx.tracker.onMarker(b.producerId, b.lastOffset, commit, ctx.keptTxns)
    if (canDiscard && b.deleteHorizon >= 0 && b.deleteHorizon <= ctx.now) return { out: undefined, removed: b.recordCount }
    if (canDiscard && b.deleteHorizon < 0 && commit !== undefined) {
      const data = await recordsSection(b)
      return { out: await rebuildBatch(b, data, parseRecords(b, data), ctx.now + ctx.deleteRetentionMs), removed: 0 }
    }
    return { out: raw, removed: 0 }
  }
  const retainEmpty = b.producerId >= 0 && ctx.lastBatches.get(b.producerId) === b.lastOffset
  const empty = async (): Promise<Buffer | undefined> => (retainEmpty ? rebuildBatch(b, Buffer.alloc(0), [], -1) : undefined)
  if (b.isTransactional && ctx.tracker.onDataBatch(b.producerId, b.lastOffset)) return { out: await empty(), removed: b.recordCount }
  const data = await recordsSection(b)
  const records = parseRecords(b, data)
  if (records.length === 0) return { out: retainEmpty ? raw : undefined, removed: 0 }
  const retainDeletes = b.deleteHorizon < 0 || ctx.now < b.deleteHorizon
  const kept = records.filter((r) => {
    // Kafka's cleaner drops records without a key: they cannot be compacted.
    if (r.key === undefined) return false
    const latest = ctx.map.get(r.key)
    return (latest === undefined || r.offset >= latest) && (r.hasValue || retainDeletes)
  })
  const removed = records.length - kept.length
  const needHorizon = b.deleteHorizon < 0 && kept.some((r) => !r.hasValue)
  if (removed === 0 && !needHorizon) return { out: raw, removed }
  if (kept.length === 0) return { out: await empty(), removed }
  return { out: await rebuildBatch(b, data, kept, needHorizon ? ctx.now + ctx.deleteRetentionMs : -1), removed }
}

/**
 * Cleans the log once, as Kafka's Cleaner.doClean: builds the offset map of
 * the dirty section, then rewrites every segment below its end, oldest first,
 * in groups, each swapped in crash-safely (see swap.ts). Offsets never change.
 * Returns undefined when the log closed (or a group changed under it) and the
 * pass was abandoned; whatever was swapped in before that stays.
 */
export async function cleanLog(log: PartitionLog, plan: CleanPlan, opts: CleanOptions = {}): Promise<CleanResult | undefined> {
  const now = opts.now ?? Date.now()
  const pacer = opts.pacer ?? new Pacer()
  const cap = Math.max(1, Math.floor((opts.dedupeBufferSize ?? DEFAULT_DEDUPE_BUFFER_SIZE) / MAP_ENTRY_BYTES))
  if (plan.dirty.length === 0) return undefined
  try {
    const { map, endOffset, bytesRead } = await buildOffsetMap(log, plan, cap, pacer, opts.stopping)
    const ctx: FilterContext = {
      map,
      tracker: new TxnTracker(abortedTxnsOf(log.segments, -1)),
      keptTxns: [],
      lastBatches: log.producers.lastBatchOffsets(),
      now,
      deleteRetentionMs: log.config.deleteRetentionMs,
    }
    const result: CleanResult = { endOffset, segmentsCleaned: 0, bytesRead, bytesWritten: 0, recordsRemoved: 0 }
    const toClean = log.segments.filter((s) => s !== log.active && s.nextOffset <= endOffset)
    for (const group of groupSegments(toClean, log.config.segmentBytes)) {
      if (!(await cleanGroup(log, group, ctx, result, pacer, now, opts))) return undefined
    }
    return result
  } catch (err) {
    // A log deleted or closed under the pass fails its reads: that is an abandoned pass, not a bad log.
    if (err instanceof Aborted || log.isClosed) return undefined
    throw err
  }
}

/**
 * LogSegment.append on the libuv pool: a synchronous write can stall for tens
 * of ms while the kernel throttles dirty pages, and the cleaner writes a lot.
 * The cleaned segment is the cleaner's alone until it is swapped in.
 */
async function appendAsync(seg: LogSegment, buf: Buffer): Promise<void> {
  const position = seg.size
  let done = 0
  while (done < buf.length) {
    done += await new Promise<number>((resolve, reject) =>
      seg.fs.write(seg.fd, buf, done, buf.length - done, position + done, (err, n) => (err === null ? resolve(n) : reject(err))),
    )
  }
  for (let p = 0; p < buf.length; ) {
    const size = LOG_OVERHEAD + buf.readInt32BE(p + BATCH_LENGTH_AT)
    const base = readInt64(buf, p)
    seg.track(position + p, size, base, base + buf.readInt32BE(p + LAST_OFFSET_DELTA_AT), readInt64(buf, p + MAX_TIMESTAMP_AT))
    p += size
  }
  seg.size = position + buf.length
  seg.dirty = true
}

/** Renames a replaced segment's files to *.deleted and stops using it (readers holding it finish on its descriptor). */
function setAside(fs: LogFileSystem, seg: LogSegment): string[] {
  const out: string[] = []
  for (const p of [seg.logPath, seg.offsetIndex.path, seg.timeIndex.path, seg.txnIndex.path]) {
    try {
      fs.renameSync(p, `${p}${DELETED_SUFFIX}`)
      out.push(`${p}${DELETED_SUFFIX}`)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    }
  }
  seg.discard()
  return out
}

async function cleanGroup(log: PartitionLog, group: LogSegment[], ctx: FilterContext, result: CleanResult, pacer: Pacer, now: number, opts: CleanOptions): Promise<boolean> {
  const fault = opts.fault
  const fs = log.fs
  const base = group[0]!.baseOffset
  const tmp = join(log.dir, cleanedDirName(base))
  rmSync(tmp, { recursive: true, force: true })
  mkdirSync(tmp)
  const out = LogSegment.create(tmp, base, log.config.indexIntervalBytes, now, fs)
  ctx.keptTxns = []
  try {
    let pending: Buffer[] = []
    let pendingBytes = 0
    const drain = async (): Promise<void> => {
      if (pendingBytes === 0) return
      const buf = Buffer.concat(pending, pendingBytes)
      pending = []
      pendingBytes = 0
      await appendAsync(out, buf)
      result.bytesWritten += buf.length
    }
    for (const seg of group) {
      for await (const raw of segmentBatches(seg)) {
        checkOpen(log, opts.stopping)
        await pacer.tick()
        result.bytesRead += raw.length
        const { out: kept, removed } = await filterBatch(readStoredBatch(raw), raw, ctx)
        result.recordsRemoved += removed
        if (kept === undefined) continue
        // The source chunk is reused by the reader: copy what stays.
        pending.push(kept === raw ? Buffer.from(raw) : kept)
        pendingBytes += kept.length
        if (pendingBytes >= WRITE_CHUNK) await drain()
      }
    }
    await drain()
    for (const t of ctx.keptTxns) out.txnIndex.append(t)
    out.onBecomeInactive()
    await out.flush()
    out.close()
  } catch (err) {
    out.abandon()
    rmSync(tmp, { recursive: true, force: true })
    throw err
  }
  const files = [out.logPath, out.offsetIndex.path, out.timeIndex.path, ...(out.txnIndex.isEmpty ? [] : [out.txnIndex.path])].map((p) => p.slice(tmp.length + 1))
  const manifest: SwapManifest = { base, members: group.map((s) => s.baseOffset), files }
  writeFileSync(join(tmp, MANIFEST), JSON.stringify(manifest))
  // Retention by time falls back to the file's age: keep the newest replaced segment's.
  const mtime = Math.max(...group.map((s) => s.lastModified)) / 1000
  utimesSync(out.logPath, mtime, mtime)
  await fsyncDirAsync(fs, tmp)
  fault?.('cleaned', base)

  // Nothing may have changed the group while it was read (retention, a deletion).
  const unchanged = (): boolean => {
    const at = log.segments.indexOf(group[0]!)
    return !log.isClosed && at >= 0 && group.every((s, i) => log.segments[at + i] === s)
  }
  if (!unchanged()) {
    rmSync(tmp, { recursive: true, force: true })
    return false
  }
  const swap = join(log.dir, swapDirName(base))
  const aside: string[] = []
  try {
    // The commit: one rename, made durable off the event loop.
    fs.renameSync(tmp, swap)
    await fsyncDirAsync(fs, log.dir)
    fault?.('committed', base)
    if (!unchanged()) {
      // Undone (a start after a crash here finds either name and settles it, losing nothing).
      fs.renameSync(swap, tmp)
      rmSync(tmp, { recursive: true, force: true })
      return false
    }
    // From here to the splice everything is synchronous, so no read sees a half-swapped log.
    // The replaced files are renamed aside and removed off the event loop: unlinking a large
    // file can take tens of ms (a start removes *.deleted files too).
    for (const s of group) aside.push(...setAside(fs, s))
    fault?.('old-deleted', base)
    moveIntoPlace(fs, log.dir, swap, manifest)
    fault?.('moved', base)
  } catch (err) {
    if (fault !== undefined) throw err
    throw log.dirState.fail(err, `swapping cleaned segment ${base} of ${log.topic}-${log.partition}`)
  }
  const at = log.segments.indexOf(group[0]!)
  const fresh = LogSegment.open(log.dir, base, log.config.indexIntervalBytes, now, fs, log.files)
  if (!fresh.resumeIndexes()) recoverSegment(fresh)
  // An emptied segment keeps its place only at the start of the log, where its base offset is the log start.
  if (fresh.isEmpty && at > 0) {
    fresh.delete()
    log.segments.splice(at, group.length)
  } else {
    log.segments.splice(at, group.length, fresh)
  }
  result.segmentsCleaned += group.length
  const settled = (async () => {
    await fsyncDirAsync(fs, log.dir)
    for (const p of aside) await rmAsync(fs, p)
  })()
  settled.catch((err: unknown) => {
    // A partition deleted meanwhile took its directory along: nothing is left to sync or remove.
    if (log.isClosed || (err as NodeJS.ErrnoException).code === 'ENOENT') return
    log.dirState.fail(err, `removing the segments cleaned away from ${log.topic}-${log.partition}`)
  })
  return true
}
