import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { silentLogger } from '../logger.js'
import { defaultFileSystem } from './file-system.js'
import { INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, parseSegmentFileName } from './format.js'
import type { LogConfig, PartitionLogOptions, RecoveryReport } from './partition-log.js'
import { recoverSegment } from './recovery.js'
import { TXN_INDEX_SUFFIX } from './txn-index.js'
import { settleSwaps } from './compaction/swap.js'
import { LogSegment } from './segment.js'

export interface LoadedSegments {
  /** Oldest first, never empty. */
  segments: LogSegment[]
  report: RecoveryReport
  /** The partition directory did not exist and was created. */
  created: boolean
  /** The directory held segment files (otherwise a first one was created). */
  hadSegments: boolean
}

/**
 * Opens (or creates) a partition directory's segments. After an unclean stop,
 * every segment holding offsets at or past the recovery point is re-read and
 * truncated at its first bad byte; others (and all of them after a clean stop)
 * only have their indexes checked and their tails walked, and fall back to a
 * full re-read if that finds anything wrong. Segments that no longer continue
 * the log's offsets after a truncation are deleted.
 */
export function loadSegments(opts: PartitionLogOptions, config: LogConfig, now: number): LoadedSegments {
    const logger = opts.logger ?? silentLogger
    const name = `${opts.topic}-${opts.partition}`
    const fs = opts.fs ?? defaultFileSystem
    const created = !existsSync(opts.dir)
    if (created) fs.mkdirSync(opts.dir, { recursive: true })

    // A cleaner swap that committed before a crash is finished; one that did not is dropped.
    const swapped = created ? 0 : settleSwaps(fs, opts.dir)
    if (swapped > 0) logger.info(`${name}: finished ${swapped} interrupted cleaner swap(s)`)
    const bases: number[] = []
    const indexFiles: string[] = []
    for (const f of readdirSync(opts.dir)) {
      const base = parseSegmentFileName(f, LOG_SUFFIX)
      if (base >= 0) bases.push(base)
      else if (f.endsWith(INDEX_SUFFIX) || f.endsWith(TIME_INDEX_SUFFIX) || f.endsWith(TXN_INDEX_SUFFIX)) indexFiles.push(f)
      else if (f.endsWith('.tmp') || f.endsWith('.deleted')) fs.unlinkSync(join(opts.dir, f))
    }
    bases.sort((a, b) => a - b)
    const live = new Set(bases)
    for (const f of indexFiles) {
      const suffix = f.endsWith(INDEX_SUFFIX) ? INDEX_SUFFIX : f.endsWith(TIME_INDEX_SUFFIX) ? TIME_INDEX_SUFFIX : TXN_INDEX_SUFFIX
      if (!live.has(parseSegmentFileName(f, suffix))) fs.unlinkSync(join(opts.dir, f))
    }

    const recoveryPoint = opts.clean === true ? Infinity : (opts.recoveryPoint ?? 0)
    const report: RecoveryReport = { recoveredSegments: 0, truncatedBytes: 0, droppedSegments: 0 }
    const segments: LogSegment[] = []
    let truncated = false
    try {
      for (let i = 0; i < bases.length; i++) {
        const seg = LogSegment.open(opts.dir, bases[i]!, config.indexIntervalBytes, now, fs, opts.files)
        const prev = segments[segments.length - 1]
        if (prev !== undefined && (seg.baseOffset < prev.nextOffset || (truncated && seg.baseOffset !== prev.nextOffset))) {
          // An overlap, or a gap after a truncation: what follows cannot be served as one log.
          // (Other gaps are normal: the log cleaner removes offsets and never renumbers.)
          logger.warn(
            `${name}: segment ${seg.baseOffset} does not continue the log at ${prev.nextOffset}; deleting it and ${bases.length - i - 1} later segment(s)`,
          )
          seg.delete()
          report.droppedSegments++
          for (let j = i + 1; j < bases.length; j++) {
            LogSegment.open(opts.dir, bases[j]!, config.indexIntervalBytes, now, fs, opts.files).delete()
            report.droppedSegments++
          }
          break
        }
        truncated = false
        const next = bases[i + 1]
        // Segments holding offsets at or past the recovery point were never fsynced and
        // may be torn; the others are re-read only if their indexes or tail look wrong.
        const resumed = seg.resumeIndexes()
        const recover = !resumed || seg.nextOffset > recoveryPoint
        if (!resumed && next !== undefined && next <= recoveryPoint) {
          logger.warn(`${name}: segment ${seg.baseOffset} failed its index check; re-reading it`)
        }
        if (recover) {
          const r = recoverSegment(seg)
          report.recoveredSegments++
          truncated = r.truncatedBytes > 0
          if (r.truncatedBytes > 0) {
            report.truncatedBytes += r.truncatedBytes
            logger.warn(
              `${name}: truncated ${r.truncatedBytes} byte(s) off segment ${seg.baseOffset} at position ${seg.size}: ${r.reason ?? 'invalid data'}`,
            )
          }
          // What recovery read may be only in the page cache; make it durable before the
          // recovery point moves past it.
          seg.flushSync()
        }
        if (seg.isEmpty && next !== undefined && segments.length > 0) {
          // An empty segment between others carries nothing; it would only confuse lookups.
          seg.delete()
          continue
        }
        segments.push(seg)
      }
      if (segments.length === 0) {
        segments.push(LogSegment.create(opts.dir, Math.max(opts.logStartOffset ?? 0, 0), config.indexIntervalBytes, now, fs, opts.files))
      }
    } catch (err) {
      for (const s of segments) s.close()
      throw err
    }
    return { segments, report, created, hadSegments: bases.length > 0 }
}
