import { mkdirSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { writeFileAtomicSync } from './log/checkpoint.js'
import type { Logger } from './logger.js'

/**
 * The data directory's format version, so a later release (transactions,
 * ACLs, configs) knows what layout it is opening and can migrate it, and this
 * release refuses a layout it cannot know. Each store also stamps its own
 * files; this one covers the directory as a whole (what exists, where).
 */
export const DATA_DIR_FORMAT_FILE = 'tidelog.format'
/** Version 1: the layout of the first release (segments, checkpoints, topics.json, meta.properties, __consumer_offsets). */
export const DATA_DIR_FORMAT_VERSION = 1
const KEY = 'format.version'

/** The data directory was written by a newer release, or its format file is unreadable. The CLI exits 1 on it. */
export class DataDirFormatError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'DataDirFormatError'
  }
}

function formatText(version: number): string {
  return `# tidelog data directory format; a broker that knows an older one refuses to start here.\n${KEY}=${version}\n`
}

/**
 * Reads `<dataDir>/tidelog.format` before anything else touches the
 * directory. A fresh directory, or one the first release wrote before the
 * file existed (same layout as version 1), is stamped with the current
 * version; a newer version throws DataDirFormatError. Returns the version
 * found (0 when there was none).
 */
export function checkDataDirFormat(dataDir: string, logger: Logger): number {
  mkdirSync(dataDir, { recursive: true })
  const path = join(dataDir, DATA_DIR_FORMAT_FILE)
  let text: string | undefined
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  if (text === undefined) {
    if (readdirSync(dataDir).length > 0) logger.info(`${dataDir}: no ${DATA_DIR_FORMAT_FILE}; the layout is format ${DATA_DIR_FORMAT_VERSION}'s, stamping it`)
    writeFileAtomicSync(path, formatText(DATA_DIR_FORMAT_VERSION))
    return 0
  }
  const version = parseFormat(text)
  if (version === undefined) {
    throw new DataDirFormatError(`${path} does not hold a ${KEY}=<integer> line; it is not a tidelog data directory this release can read`)
  }
  if (version > DATA_DIR_FORMAT_VERSION) {
    throw new DataDirFormatError(
      `${dataDir} has data directory format ${version}, written by a newer tidelog-broker; this one reads up to format ${DATA_DIR_FORMAT_VERSION}. Start the newer release on it, or use another --data-dir`,
    )
  }
  // Older formats would be migrated here, then the file rewritten; version 1 is the first.
  return version
}

function parseFormat(text: string): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^\s*([^#=\s][^=]*?)\s*=\s*(.*?)\s*$/.exec(line)
    if (m === null || m[1] !== KEY) continue
    if (!/^\d{1,9}$/.test(m[2]!)) return undefined
    const v = Number(m[2])
    return v >= 1 ? v : undefined
  }
  return undefined
}
