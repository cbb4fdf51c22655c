import { closeSync, linkSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs'
import { hostname } from 'node:os'
import { join, resolve } from 'node:path'
import { LogDirLockedError } from './errors.js'

export const LOCK_FILE = '.lock'

// Locks this process holds, so a second broker in the same process (tests,
// embedding) is refused as firmly as one in another process.
const held = new Set<string>()

export interface DataDirLock {
  readonly path: string
  release(): void
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function readHolder(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
}

/**
 * Takes the data directory for this process. Node has no portable flock, so
 * the lock is a file created exclusively (O_EXCL) holding "pid host". A lock
 * left by a process that no longer runs on this host (kill -9, power loss) is
 * taken over; one held by a live process, by this process, or by another host
 * (a shared volume) is refused with LogDirLockedError.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  const path = resolve(join(dataDir, LOCK_FILE))
  const me = `${process.pid} ${hostname()}\n`
  if (held.has(path)) throw new LogDirLockedError(dataDir, `this process (pid ${process.pid})`)
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const fd = openSync(path, 'wx')
      try {
        writeSync(fd, me)
      } finally {
        closeSync(fd)
      }
      held.add(path)
      return {
        path,
        release() {
          if (!held.delete(path)) return
          try {
            if (readHolder(path) === me) unlinkSync(path)
          } catch {
            // Already gone: nothing to release.
          }
        },
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    }
    const content = readHolder(path)
    if (content === undefined) continue
    const m = /^(\d+) (.*)\n?$/.exec(content)
    if (m === null) {
      // Another broker between its create and its write, or a crash right there.
      let age = 0
      try {
        age = Date.now() - statSync(path).mtimeMs
      } catch {
        continue
      }
      if (age < 2000) throw new LogDirLockedError(dataDir, 'a broker that is starting')
    } else {
      const pid = Number(m[1])
      const host = m[2]!
      if (host !== hostname()) throw new LogDirLockedError(dataDir, `pid ${pid} on host ${host}`)
      if (pid !== process.pid && alive(pid)) throw new LogDirLockedError(dataDir, `pid ${pid}`)
    }
    // Stale. Move it aside atomically so that of two brokers taking over at once
    // only one removes it, then check that what moved is what was judged stale.
    const aside = `${path}.stale-${process.pid}-${attempt}`
    try {
      renameSync(path, aside)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue
      throw err
    }
    const moved = readHolder(aside)
    if (moved !== content) {
      // A fresh lock was created in between and we moved it: put it back.
      try {
        linkSync(aside, path)
      } catch {
        // Someone created yet another one; theirs stands.
      }
    }
    unlinkSync(aside)
  }
  throw new LogDirLockedError(dataDir, 'another broker (the lock kept changing hands)')
}
