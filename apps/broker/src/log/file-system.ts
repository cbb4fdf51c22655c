import * as nodeFs from 'node:fs'
import { dirname } from 'node:path'

type Callback = (err: NodeJS.ErrnoException | null) => void

/**
 * The file calls the log's write side makes: opening segment files, writing and
 * truncating them, fsyncing files and directories, renaming and removing. Node's
 * `fs` module is one; tests pass a wrapper that makes a call fail or slow, which
 * is how storage faults are exercised without a broken disk. Reads of segment
 * bytes use the descriptors these calls return with `node:fs` directly.
 */
export interface LogFileSystem {
  openSync(path: string, flags: string): number
  closeSync(fd: number): void
  writeSync(fd: number, buffer: Buffer, offset: number, length: number, position: number | null): number
  ftruncateSync(fd: number, len: number): void
  fsyncSync(fd: number): void
  fsync(fd: number, callback: Callback): void
  open(path: string, flags: string, callback: (err: NodeJS.ErrnoException | null, fd: number) => void): void
  write(
    fd: number,
    buffer: Buffer,
    offset: number,
    length: number,
    position: number | null,
    callback: (err: NodeJS.ErrnoException | null, written: number) => void,
  ): void
  close(fd: number, callback: Callback): void
  rename(from: string, to: string, callback: Callback): void
  renameSync(from: string, to: string): void
  rm(path: string, options: nodeFs.RmOptions, callback: Callback): void
  unlinkSync(path: string): void
  mkdirSync(path: string, options: { recursive: true }): string | undefined
}

export const defaultFileSystem: LogFileSystem = nodeFs

const done =
  (resolve: () => void, reject: (e: Error) => void): Callback =>
  (err) =>
    err === null ? resolve() : reject(err)

export function fsyncAsync(fs: LogFileSystem, fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fsync(fd, done(resolve, reject)))
}

export function renameAsync(fs: LogFileSystem, from: string, to: string): Promise<void> {
  return new Promise((resolve, reject) => fs.rename(from, to, done(resolve, reject)))
}

export function rmAsync(fs: LogFileSystem, path: string): Promise<void> {
  return new Promise((resolve, reject) => fs.rm(path, { recursive: true, force: true }, done(resolve, reject)))
}

function openAsync(fs: LogFileSystem, path: string, flags: string): Promise<number> {
  return new Promise((resolve, reject) => fs.open(path, flags, (err, fd) => (err === null ? resolve(fd) : reject(err))))
}

function closeAsync(fs: LogFileSystem, fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.close(fd, done(resolve, reject)))
}

async function writeAllAsync(fs: LogFileSystem, fd: number, buf: Buffer): Promise<void> {
  let at = 0
  while (at < buf.length) {
    at += await new Promise<number>((resolve, reject) =>
      fs.write(fd, buf, at, buf.length - at, at, (err, n) => (err === null ? resolve(n) : reject(err))),
    )
  }
}

/**
 * fsyncs a directory, which makes the names created, renamed or removed in it
 * durable (a new segment file is not durable until its directory entry is).
 */
export async function fsyncDirAsync(fs: LogFileSystem, dir: string): Promise<void> {
  // Directories cannot be opened for fsync on Windows; there the rename is what we get.
  if (process.platform === 'win32') return
  const fd = await openAsync(fs, dir, 'r')
  try {
    await fsyncAsync(fs, fd)
  } finally {
    await closeAsync(fs, fd)
  }
}

export function fsyncDirSyncWith(fs: LogFileSystem, dir: string): void {
  if (process.platform === 'win32') return
  const fd = fs.openSync(dir, 'r')
  try {
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

/**
 * Replaces `path` with `data` on the libuv pool so that a crash leaves either
 * the old or the new content: temp file, fsync, rename, fsync of the directory.
 * With `durable` false the fsyncs are skipped: the file is still never torn,
 * only possibly lost after a power failure (enough for a rebuildable snapshot).
 */
export async function writeFileAtomicWith(fs: LogFileSystem, path: string, data: string | Buffer, durable = true): Promise<void> {
  const tmp = `${path}.tmp`
  const fd = await openAsync(fs, tmp, 'w')
  try {
    await writeAllAsync(fs, fd, typeof data === 'string' ? Buffer.from(data) : data)
    if (durable) await fsyncAsync(fs, fd)
  } finally {
    await closeAsync(fs, fd)
  }
  await renameAsync(fs, tmp, path)
  if (durable) await fsyncDirAsync(fs, dirname(path))
}
