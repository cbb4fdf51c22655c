import { join } from 'node:path'
import { type LogFileSystem, fsyncDirAsync, rmAsync } from '../file-system.js'
import type { PartitionLog } from '../partition-log.js'
import { recoverSegment } from '../recovery.js'
import { LogSegment } from '../segment.js'
import type { AbortedTxn } from '../txn-index.js'
import type { SegmentRef } from './clean-work.js'
import { DEFAULT_LOAD_FACTOR } from './offset-map.js'
import { DELETED_SUFFIX, type SwapStep, cleanedDirName, moveOutOfSwap, setDirAside, swapDirName } from './swap.js'
import { type CleanerSession, type CleanerWorker, isCleaningAborted, sharedCleanerWorker } from './worker-client.js'

/** Kafka's log.cleaner.dedupe.buffer.size default (one cleaner thread has it all). */
export const DEFAULT_DEDUPE_BUFFER_SIZE = 128 * 1024 * 1024

/** What the cleaner measures of one log before choosing it (Kafka's LogToClean). */
export interface CleanPlan {
  firstDirty: number
  /** The non-active segments that hold offsets in [firstDirty, firstUncleanable). */
  dirty: LogSegment[]
  /** Kafka's firstUncleanableOffset: the dirty section ends here, possibly inside its last segment. */
  firstUncleanable: number
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
  /** log.cleaner.io.buffer.load.factor: the share of the key map's slots a pass fills. */
  loadFactor?: number
  /** log.cleaner.io.max.bytes.per.second */
  maxBytesPerSecond?: number
  /** The cleaner is shutting down: the worker gives up at its next batch. */
  stopping?: () => boolean
  /** The worker thread that does the reading and writing (the process' shared one by default). */
  worker?: CleanerWorker
}

export interface CleanResult {
  /** The new first dirty offset (the cleaner checkpoint). */
  endOffset: number
  segmentsCleaned: number
  bytesRead: number
  bytesWritten: number
  recordsRemoved: number
  /** The key map filled before the dirty section ended: the next pass goes on from endOffset. */
  mapFull: boolean
  /** Share of the key map's slots used (Kafka's buffer utilization). */
  bufferUtilization: number
}

/**
 * Where the dirty section of a log starts and ends, as Kafka's
 * LogCleanerManager measures it: from the checkpointed first dirty offset to
 * the first uncleanable one, which is the lowest of the active segment's base
 * offset, the last stable offset (an open transaction's data is never
 * cleaned) and the first segment holding a record younger than
 * min.compaction.lag.ms. As in Kafka, a segment holding the uncleanable offset
 * (the LSO can be anywhere in one) is cleaned below it; from it on, its batches
 * are kept as they are (clean-work.ts).
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
    // Overlapping [firstDirty, uncleanable), as Kafka's LocalLog.segments(from, to); nothing when they meet.
    if (seg.baseOffset >= uncleanable || firstDirty >= uncleanable) break
    dirty.push(seg)
  }
  let dirtyBytes = 0
  for (const s of dirty) dirtyBytes += s.size
  const first = dirty[0]
  const oldest = first === undefined ? -1 : first.firstBatchTimestamp >= 0 ? first.firstBatchTimestamp : first.maxTimestamp
  const needNow = Number.isFinite(c.maxCompactionLagMs) && oldest >= 0 && now - oldest > c.maxCompactionLagMs
  const total = cleanBytes + dirtyBytes
  return { firstDirty, dirty, firstUncleanable: uncleanable, cleanBytes, dirtyBytes, ratio: total === 0 ? 0 : dirtyBytes / total, needNow }
}

/** Whether Kafka's cleaner would pick the log: dirty past min.cleanable.dirty.ratio, or overdue by max.compaction.lag.ms. */
export function isCleanable(plan: CleanPlan, log: PartitionLog): boolean {
  if (!log.config.cleanupCompact || plan.dirtyBytes === 0) return false
  return plan.needNow || plan.ratio > log.config.minCleanableDirtyRatio
}

function abortedTxnsOf(segments: readonly LogSegment[], fromMarker: number): AbortedTxn[] {
  const out: AbortedTxn[] = []
  for (const s of segments) for (const t of s.txnIndex.entries) if (t.lastOffset >= fromMarker) out.push(t)
  return out
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

const refOf = (s: LogSegment): SegmentRef => ({ base: s.baseOffset, last: s.lastOffset, path: s.logPath, size: s.size })

/**
 * Cleans the log once, as Kafka's Cleaner.doClean: the worker thread builds
 * the key map of the dirty section, then rewrites every segment below the
 * offset the map covered, oldest first, in groups; each is swapped in
 * crash-safely here on the broker's thread (see swap.ts). Offsets never
 * change. Returns undefined when the log closed (or a group changed under it)
 * and the pass was abandoned; whatever was swapped in before that stays.
 */
export async function cleanLog(log: PartitionLog, plan: CleanPlan, opts: CleanOptions = {}): Promise<CleanResult | undefined> {
  const now = opts.now ?? Date.now()
  if (plan.dirty.length === 0) return undefined
  const worker = opts.worker ?? sharedCleanerWorker()
  const stop = (): boolean => log.isClosed || log.isOffline || opts.stopping?.() === true
  let session: CleanerSession | undefined
  const read = new Set<LogSegment>(plan.dirty)
  try {
    const begun = await worker.begin(
      {
        dir: log.dir,
        firstDirty: plan.firstDirty,
        dirty: plan.dirty.map(refOf),
        upperBound: plan.firstUncleanable,
        abortedFromDirty: abortedTxnsOf(log.segments, plan.dirty[0]!.baseOffset),
        abortedAll: abortedTxnsOf(log.segments, -1),
        lastBatches: [...log.producers.lastBatchOffsets()],
        now,
        deleteRetentionMs: log.config.deleteRetentionMs,
        indexIntervalBytes: log.config.indexIntervalBytes,
        dedupeBufferSize: opts.dedupeBufferSize ?? DEFAULT_DEDUPE_BUFFER_SIZE,
        loadFactor: opts.loadFactor ?? DEFAULT_LOAD_FACTOR,
        maxBytesPerSecond: opts.maxBytesPerSecond ?? Infinity,
      },
      stop,
    )
    session = begun.session
    const { endOffset, bytesRead, full, bufferUtilization } = begun.map
    const result: CleanResult = { endOffset, segmentsCleaned: 0, bytesRead, bytesWritten: 0, recordsRemoved: 0, mapFull: full, bufferUtilization }
    // A segment the map covered only in part is rewritten whole: records past the map are newer than anything in it, so they stay.
    const toClean = log.segments.filter((s) => s !== log.active && s.baseOffset < endOffset)
    for (const s of toClean) read.add(s)
    for (const group of groupSegments(toClean, log.config.segmentBytes)) {
      if (!(await cleanGroup(log, group, session, result, now, opts))) return undefined
    }
    return result
  } catch (err) {
    // A log deleted or closed under the pass fails its reads: that is an abandoned pass, not a bad log.
    if (isCleaningAborted(err) || log.isClosed) return undefined
    // The worker opens segments by name: one that retention (compact,delete) or DeleteRecords
    // removed meanwhile is gone, which abandons the pass as a group changed under it does.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && [...read].some((s) => !log.segments.includes(s))) return undefined
    throw err
  } finally {
    session?.end()
  }
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

async function cleanGroup(log: PartitionLog, group: LogSegment[], session: CleanerSession, result: CleanResult, now: number, opts: CleanOptions): Promise<boolean> {
  const fault = opts.fault
  const fs = log.fs
  const base = group[0]!.baseOffset
  const tmp = join(log.dir, cleanedDirName(base))
  // Step 1 in the worker: <base>.cleaned/ written and fsynced.
  const done = await session.group({ members: group.map(refOf), mtimeMs: Math.max(...group.map((s) => s.lastModified)) })
  const manifest = done.manifest
  result.bytesRead += done.bytesRead
  result.bytesWritten += done.bytesWritten
  result.recordsRemoved += done.recordsRemoved
  fault?.('cleaned', base)

  // Nothing may have changed the group while it was read (retention, a deletion).
  const unchanged = (): boolean => {
    const at = log.segments.indexOf(group[0]!)
    return !log.isClosed && at >= 0 && group.every((s, i) => log.segments[at + i] === s)
  }
  if (!unchanged()) {
    removeOffLoop(log, setDirAside(fs, tmp))
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
      removeOffLoop(log, setDirAside(fs, tmp))
      return false
    }
    // From here to the splice everything is synchronous, so no read sees a half-swapped log.
    // The replaced files are renamed aside and removed off the event loop: unlinking a large
    // file can take tens of ms (a start removes *.deleted files too).
    for (const s of group) aside.push(...setAside(fs, s))
    fault?.('old-deleted', base)
    moveOutOfSwap(fs, log.dir, swap, manifest)
    aside.push(...setDirAside(fs, swap))
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
  removeOffLoop(log, aside)
  return true
}

/** Makes the directory's renames durable, then removes `paths` (renamed aside) in the libuv pool. */
function removeOffLoop(log: PartitionLog, paths: readonly string[]): void {
  const settled = (async () => {
    await fsyncDirAsync(log.fs, log.dir)
    for (const p of paths) await rmAsync(log.fs, p)
  })()
  settled.catch((err: unknown) => {
    // A partition deleted meanwhile took its directory along: nothing is left to sync or remove.
    if (log.isClosed || (err as NodeJS.ErrnoException).code === 'ENOENT') return
    log.dirState.fail(err, `removing the segments cleaned away from ${log.topic}-${log.partition}`)
  })
}
