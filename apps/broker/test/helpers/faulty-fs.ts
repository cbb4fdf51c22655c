import * as fs from 'node:fs'
import type { LogFileSystem } from '../../src/log/index.js'

/** What to break, changeable while the broker runs. Paths are matched by the predicates. */
export interface FaultPlan {
  /** fsync of a file (or directory) fails with EIO. */
  failFsync?: (path: string) => boolean
  /** A write to a file fails with EIO (after writing nothing). */
  failWrite?: (path: string) => boolean
  /** Every fsync takes this long: the async one waits on a timer, the sync one blocks the thread. */
  fsyncDelayMs?: number
  /** fsyncs succeed without reaching the disk (for tests about something else that make thousands). */
  skipFsync?: boolean
  /** Called before each rename; may throw or end the process to simulate a crash there. */
  beforeRename?: (from: string, to: string) => void
  /** Called before a recursive removal starts. */
  beforeRm?: (path: string) => void
}

export interface FaultyFs extends LogFileSystem {
  readonly plan: FaultPlan
  /** Descriptors opened through the seam and not yet closed, by path. */
  readonly openFds: Map<number, string>
  /** The most descriptors open at once. */
  readonly peakOpen: number
  readonly fsyncs: number
  /** Of those, the ones made with fsyncSync (on the calling thread). */
  readonly syncFsyncs: number
  /** Paths fsynced, in the order the fsyncs completed. */
  readonly synced: string[]
}

function eio(call: string, path: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(`EIO: i/o error, ${call} '${path}'`)
  err.code = 'EIO'
  err.errno = -5
  err.syscall = call
  return err
}

const sleeper = new Int32Array(new SharedArrayBuffer(4))

/** node:fs with injectable faults and an open-descriptor count. */
export function faultyFs(plan: FaultPlan = {}): FaultyFs {
  const open = new Map<number, string>()
  let peak = 0
  let fsyncs = 0
  let syncFsyncs = 0
  const synced: string[] = []
  const track = (fd: number, path: string): number => {
    open.set(fd, path)
    if (open.size > peak) peak = open.size
    return fd
  }
  const pathOf = (fd: number): string => open.get(fd) ?? `fd ${fd}`
  const seam: FaultyFs = {
    plan,
    openFds: open,
    get peakOpen() {
      return peak
    },
    get fsyncs() {
      return fsyncs
    },
    get syncFsyncs() {
      return syncFsyncs
    },
    synced,
    openSync: (path, flags) => track(fs.openSync(path, flags), path),
    open: (path, flags, cb) => fs.open(path, flags, (err, fd) => cb(err, err === null ? track(fd, path) : fd)),
    closeSync: (fd) => {
      open.delete(fd)
      fs.closeSync(fd)
    },
    close: (fd, cb) => {
      open.delete(fd)
      fs.close(fd, cb)
    },
    writeSync: (fd, buf, off, len, pos) => {
      if (plan.failWrite?.(pathOf(fd)) === true) throw eio('write', pathOf(fd))
      return fs.writeSync(fd, buf, off, len, pos)
    },
    write: (fd, buf, off, len, pos, cb) => {
      if (plan.failWrite?.(pathOf(fd)) === true) {
        const err = eio('write', pathOf(fd))
        setImmediate(() => cb(err, 0))
        return
      }
      fs.write(fd, buf, off, len, pos, cb)
    },
    ftruncateSync: (fd, len) => fs.ftruncateSync(fd, len),
    fsyncSync: (fd) => {
      fsyncs++
      syncFsyncs++
      if (plan.fsyncDelayMs !== undefined) Atomics.wait(sleeper, 0, 0, plan.fsyncDelayMs)
      if (plan.failFsync?.(pathOf(fd)) === true) throw eio('fsync', pathOf(fd))
      if (plan.skipFsync !== true) fs.fsyncSync(fd)
      synced.push(pathOf(fd))
    },
    fsync: (fd, cb) => {
      fsyncs++
      const path = pathOf(fd)
      const run = (): void => {
        if (plan.failFsync?.(path) === true) cb(eio('fsync', path))
        else if (plan.skipFsync === true) setImmediate(() => cb(null))
        else
          fs.fsync(fd, (err) => {
            if (err === null) synced.push(path)
            cb(err)
          })
      }
      if (plan.fsyncDelayMs !== undefined) setTimeout(run, plan.fsyncDelayMs)
      else run()
    },
    renameSync: (from, to) => {
      plan.beforeRename?.(from, to)
      fs.renameSync(from, to)
    },
    rename: (from, to, cb) => {
      try {
        plan.beforeRename?.(from, to)
      } catch (err) {
        setImmediate(() => cb(err as NodeJS.ErrnoException))
        return
      }
      fs.rename(from, to, cb)
    },
    rm: (path, options, cb) => {
      plan.beforeRm?.(path)
      fs.rm(path, options, cb)
    },
    unlinkSync: (path) => fs.unlinkSync(path),
    mkdirSync: (path, options) => fs.mkdirSync(path, options),
  }
  return seam
}
