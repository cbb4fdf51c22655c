import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fsyncDirSyncWith, type LogFileSystem } from '../file-system.js'
import { INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, segmentFileName } from '../format.js'
import { TXN_INDEX_SUFFIX } from '../txn-index.js'

// The crash-safe replacement of cleaned segments, Kafka's .cleaned -> .swap ->
// live protocol with a whole directory as the unit, so one rename commits a
// cleaned segment and all of its index files at once:
//   1. the cleaner writes <base>.cleaned/ (segment files and manifest.json) and fsyncs it;
//   2. the commit: <base>.cleaned/ is renamed to <base>.swap/ and the partition directory fsynced;
//   3. the replaced segments' files are unlinked;
//   4. the new files move out of <base>.swap/ into the partition directory; the directory goes
//      (while the broker runs: renamed aside to *.deleted and removed off the event loop).
// A crash before 2 leaves the old segments whole (a .cleaned directory is removed at the next
// start); from 2 on, the next start finishes 3 and 4 from the manifest. Either way the log holds
// every record it had before or its compacted form, never less.

export const CLEANED_SUFFIX = '.cleaned'
export const SWAP_SUFFIX = '.swap'
export const MANIFEST = 'manifest.json'
/** A replaced segment file renamed aside, removed in the background (and by the next start). */
export const DELETED_SUFFIX = '.deleted'
export const SEGMENT_SUFFIXES = [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX] as const

/** The steps a fault can be injected after (tests kill the cleaner there). */
export type SwapStep = 'cleaned' | 'committed' | 'old-deleted' | 'moved'

export interface SwapManifest {
  /** Base offset of the cleaned segment (the first replaced one's). */
  base: number
  /** Base offsets of the segments it replaces. */
  members: number[]
  /** The file names it brings. */
  files: string[]
}

export function cleanedDirName(base: number): string {
  return segmentFileName(base, CLEANED_SUFFIX)
}

export function swapDirName(base: number): string {
  return segmentFileName(base, SWAP_SUFFIX)
}

function unlinkIfThere(fs: LogFileSystem, path: string): void {
  try {
    fs.unlinkSync(path)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
}

/** Step 3: the replaced segments' files; those of the base segment only where the cleaned one brings none. */
export function deleteReplaced(fs: LogFileSystem, dir: string, m: SwapManifest): void {
  for (const member of m.members) {
    for (const suffix of SEGMENT_SUFFIXES) {
      const name = segmentFileName(member, suffix)
      // The cleaned segment's own file of this name replaces the old one by rename.
      if (member === m.base && m.files.includes(name)) continue
      unlinkIfThere(fs, join(dir, name))
    }
  }
}

/** Step 4 without the removal: moves what is still in the swap directory into place (the manifest is all that is left). Idempotent. */
export function moveOutOfSwap(fs: LogFileSystem, dir: string, swapDir: string, m: SwapManifest): void {
  for (const name of m.files) {
    const from = join(swapDir, name)
    if (existsSync(from)) fs.renameSync(from, join(dir, name))
  }
}

/** Step 4 at a start: the moves, then the directory removed at once. */
export function moveIntoPlace(fs: LogFileSystem, dir: string, swapDir: string, m: SwapManifest): void {
  moveOutOfSwap(fs, dir, swapDir, m)
  rmSync(swapDir, { recursive: true, force: true })
}

let asideCount = 0

/**
 * Renames a cleaner directory (a .cleaned or an emptied .swap one) to a name of its own ending
 * in *.deleted, so it can be removed off the event loop: a recursive rmSync there costs the loop
 * milliseconds per swap, and removing it under its own name could race a later cleaning that
 * writes a directory of the same name. A start removes what is left (settleSwaps). Returns the
 * new path (none when the directory was already gone).
 */
export function setDirAside(fs: LogFileSystem, path: string): string[] {
  const aside = `${path}.${process.pid}-${++asideCount}${DELETED_SUFFIX}`
  try {
    fs.renameSync(path, aside)
  } catch (err) {
    // Gone already (the partition was deleted meanwhile): nothing to remove.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw err
  }
  return [aside]
}

const isDirAside = (name: string): boolean =>
  name.endsWith(DELETED_SUFFIX) && (name.includes(`${SWAP_SUFFIX}.`) || name.includes(`${CLEANED_SUFFIX}.`))

/**
 * At load, before the segments are read: removes uncommitted cleanings and
 * finishes committed swaps. Returns how many swaps it finished.
 */
export function settleSwaps(fs: LogFileSystem, dir: string): number {
  let finished = 0
  for (const name of readdirSync(dir)) {
    if (name.endsWith(CLEANED_SUFFIX) || isDirAside(name)) {
      rmSync(join(dir, name), { recursive: true, force: true })
    } else if (name.endsWith(SWAP_SUFFIX)) {
      const swapDir = join(dir, name)
      const manifestPath = join(swapDir, MANIFEST)
      if (!existsSync(manifestPath)) {
        // The manifest is the first file moved out of nothing: without it the
        // directory was emptied by an earlier settle that stopped before removing it.
        rmSync(swapDir, { recursive: true, force: true })
        continue
      }
      const m = JSON.parse(readFileSync(manifestPath, 'utf8')) as SwapManifest
      deleteReplaced(fs, dir, m)
      moveIntoPlace(fs, dir, swapDir, m)
      fsyncDirSyncWith(fs, dir)
      finished++
    }
  }
  return finished
}
