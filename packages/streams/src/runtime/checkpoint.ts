import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs'
import { dirname } from 'node:path'
import { StreamsException } from '../errors.js'

/** Java's OffsetCheckpoint file name in a task directory. */
export const CHECKPOINT_FILE = '.checkpoint'

export interface CheckpointEntry {
  topic: string
  partition: number
  offset: bigint
}

/**
 * Java's OffsetCheckpoint text format: the version (0), the entry count, then one
 * `<topic> <partition> <offset>` line each. Written to a temporary file, synced and renamed
 * over the old one, so a crash leaves either the old or the new checkpoint, never half of one.
 */
export function writeCheckpoint(file: string, entries: readonly CheckpointEntry[]): void {
  mkdirSync(dirname(file), { recursive: true })
  const text = `0\n${entries.length}\n${entries.map((e) => `${e.topic} ${e.partition} ${e.offset}\n`).join('')}`
  const tmp = `${file}.tmp`
  const fd = openSync(tmp, 'w')
  try {
    writeSync(fd, text)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(tmp, file)
}

/** Reads a checkpoint; none (an empty list) when the file does not exist. A malformed file is an error, as in Java. */
export function readCheckpoint(file: string): CheckpointEntry[] {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw e
  }
  const lines = text.split('\n').filter((l) => l.length > 0)
  if (lines[0] !== '0') throw new StreamsException(`Unknown offset checkpoint version in ${file}: ${lines[0]}`)
  const count = Number(lines[1])
  const entries: CheckpointEntry[] = []
  for (const line of lines.slice(2)) {
    const parts = line.split(' ')
    if (parts.length !== 3 || !/^\d+$/.test(parts[1]!) || !/^-?\d+$/.test(parts[2]!)) throw new StreamsException(`Malformed line in offset checkpoint file ${file}: '${line}'`)
    entries.push({ topic: parts[0]!, partition: Number(parts[1]), offset: BigInt(parts[2]!) })
  }
  if (!Number.isInteger(count) || entries.length !== count) throw new StreamsException(`Expected ${lines[1]} entries in offset checkpoint file ${file} but found only ${entries.length}`)
  return entries
}

export function deleteCheckpoint(file: string): void {
  rmSync(file, { force: true })
}
