import { readFileSync } from 'node:fs'
import type { LogFileSystem } from './file-system.js'

/**
 * File handling shared by the offset and time indexes: both keep their entries in
 * memory, append the new ones on flush (or rewrite the file after a truncation), and
 * load by reading the whole file, rebuilding from the log when it is missing or torn.
 */
export function persistEntries(fs: LogFileSystem, path: string, out: Buffer, rewrite: boolean): void {
  const fd = fs.openSync(path, rewrite ? 'w' : 'a')
  try {
    if (out.length > 0) fs.writeSync(fd, out, 0, out.length, null)
  } finally {
    fs.closeSync(fd)
  }
}

/** The file's bytes, or undefined when it is missing or ends in a partial entry. */
export function readEntries(path: string, entrySize: number): Buffer | undefined {
  let data: Buffer
  try {
    data = readFileSync(path)
  } catch {
    return undefined
  }
  return data.length % entrySize === 0 ? data : undefined
}
