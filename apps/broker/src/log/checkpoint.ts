import { readFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { type LogFileSystem, defaultFileSystem, fsyncDirAsync, fsyncDirSyncWith, writeFileAtomicWith } from './file-system.js'

/**
 * Replaces `path` with `data` so that a crash leaves either the old or the new
 * content, never a mix: write a temp file, fsync it, rename it over, fsync the
 * directory so the rename itself is durable.
 */
export function writeFileAtomicSync(path: string, data: string | Buffer, durable = true, fs: LogFileSystem = defaultFileSystem): void {
  const tmp = `${path}.tmp`
  const fd = fs.openSync(tmp, 'w')
  try {
    const buf = typeof data === 'string' ? Buffer.from(data) : data
    let done = 0
    while (done < buf.length) done += fs.writeSync(fd, buf, done, buf.length - done, done)
    // Without the fsyncs the file is still never torn (the rename is atomic), only
    // possibly lost or empty after a power failure: enough for a rebuildable cache.
    if (durable) fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
  fs.renameSync(tmp, path)
  if (durable) fsyncDirSyncWith(fs, dirname(path))
}

/** The same, without blocking the event loop on the fsyncs (the calls run on the libuv pool). */
export function writeFileAtomic(path: string, data: string | Buffer): Promise<void> {
  return writeFileAtomicWith(defaultFileSystem, path, data)
}

export function fsyncDirSync(dir: string): void {
  fsyncDirSyncWith(defaultFileSystem, dir)
}

/** fsync a directory on the libuv pool (after a rename or a create in it). */
export function fsyncDir(dir: string): Promise<void> {
  return fsyncDirAsync(defaultFileSystem, dir)
}

// Kafka's offset checkpoint layout: a version line, a count line, then one
// "topic partition offset" line per partition. Topic names cannot contain
// spaces, so the format needs no quoting.
const VERSION = 0

/** Keyed by partition directory name (`<topic>-<partition>`). */
export type Checkpoint = Map<string, { topic: string; partition: number; offset: number }>

export function formatCheckpoint(entries: Iterable<{ topic: string; partition: number; offset: number }>): string {
  const lines: string[] = []
  for (const e of entries) lines.push(`${e.topic} ${e.partition} ${e.offset}`)
  return `${VERSION}\n${lines.length}\n${lines.join('\n')}${lines.length > 0 ? '\n' : ''}`
}

/** Parses a checkpoint; throws an Error naming the problem if it is malformed. */
export function parseCheckpoint(text: string): Checkpoint {
  const lines = text.split('\n')
  if (lines[lines.length - 1] === '') lines.pop()
  if (lines.length < 2 || lines[0] !== String(VERSION)) throw new Error(`unsupported checkpoint version ${JSON.stringify(lines[0])}`)
  const count = Number(lines[1])
  if (!Number.isSafeInteger(count) || count < 0 || lines.length !== count + 2) {
    throw new Error(`checkpoint announces ${lines[1]} entries but holds ${lines.length - 2}`)
  }
  const out: Checkpoint = new Map()
  for (let i = 2; i < lines.length; i++) {
    const m = /^(\S+) (\d+) (-?\d+)$/.exec(lines[i]!)
    if (m === null) throw new Error(`malformed checkpoint line ${i + 1}: ${JSON.stringify(lines[i])}`)
    const topic = m[1]!
    const partition = Number(m[2])
    const offset = Number(m[3])
    if (!Number.isSafeInteger(partition) || !Number.isSafeInteger(offset)) {
      throw new Error(`malformed checkpoint line ${i + 1}: ${JSON.stringify(lines[i])}`)
    }
    out.set(`${topic}-${partition}`, { topic, partition, offset })
  }
  return out
}

/** Reads a checkpoint file: an empty map if it does not exist; throws if it is malformed. */
export function readCheckpoint(path: string): Checkpoint {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map()
    throw err
  }
  return parseCheckpoint(text)
}
