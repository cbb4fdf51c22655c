import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open, type Database, type RootDatabase } from 'lmdb'
import { StreamsException } from '../errors.js'

/**
 * LMDB keys must be non-empty and at most this long (lmdb-js' compiled limit); a serialized key
 * of Kafka Streams may be empty, so every stored key gets one 0x00 byte in front, which keeps the
 * unsigned lexicographic order (Java's Bytes.BYTES_LEXICO_COMPARATOR) and leaves 1977 bytes.
 */
export const MAX_KEY_BYTES = 1977

/** Writes held in memory before they go to LMDB in one transaction (bounds the buffer between commits). */
const MAX_PENDING = 10_000

export function storedKey(key: Buffer): Buffer {
  if (key.length > MAX_KEY_BYTES) throw new StreamsException(`a persistent store key may be at most ${MAX_KEY_BYTES} bytes (got ${key.length}); use an in-memory store for larger keys`)
  const out = Buffer.allocUnsafe(key.length + 1)
  out[0] = 0
  key.copy(out, 1)
  return out
}

/** Exclusive end of an inclusive range: the smallest key after `to` is `to` followed by 0x00. */
function after(key: Buffer): Buffer {
  return Buffer.concat([key, Buffer.alloc(1)])
}

/**
 * One LMDB environment in a store's directory, with named sub-databases for segmented stores.
 * Without a directory (the TopologyTestDriver, global stores) a temporary one is used and
 * removed on close.
 */
export class LmdbEnv {
  readonly dir: string
  private readonly root: RootDatabase<Buffer, Buffer>
  private readonly temporary: boolean
  private closed = false

  constructor(dir: string | undefined, opts: { wipe: boolean; maxDbs?: number }) {
    this.temporary = dir === undefined
    this.dir = dir ?? mkdtempSync(join(tmpdir(), 'tidelog-store-'))
    if (opts.wipe) rmSync(this.dir, { recursive: true, force: true })
    mkdirSync(this.dir, { recursive: true })
    // Each flush is one synced LMDB transaction: the task's checkpoint (written after a flush, and
    // fsynced) must never claim more than the disk holds, even after a power loss. A temporary
    // store (the test driver's) needs no durability.
    this.root = open<Buffer, Buffer>({
      path: join(this.dir, 'data.mdb'),
      keyEncoding: 'binary',
      encoding: 'binary',
      compression: false,
      noSync: this.temporary,
      maxDbs: opts.maxDbs ?? 12,
    })
  }

  db(name?: string): Database<Buffer, Buffer> {
    return name === undefined ? this.root : this.root.openDB({ name, keyEncoding: 'binary', encoding: 'binary', compression: false })
  }

  transaction(fn: () => void): void {
    this.root.transactionSync(fn)
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    const dir = this.dir
    const done = this.root.close()
    if (this.temporary) void done.then(() => rmSync(dir, { recursive: true, force: true }), () => {})
  }
}

/**
 * The bytes under a persistent key-value store: LMDB in memcmp order, with the writes since the
 * last flush held in memory (as RocksDB's memtable) and written in one transaction on flush
 * (each commit, and every MAX_PENDING writes).
 */
export class LmdbKeyValueBytesStore {
  private readonly db: Database<Buffer, Buffer>
  private pending = new Map<string, Buffer | null>()

  constructor(private readonly env: LmdbEnv, name?: string) {
    this.db = env.db(name)
  }

  get(key: Buffer): Buffer | undefined {
    const p = this.pending.get(key.toString('latin1'))
    if (p !== undefined) return p ?? undefined
    return this.db.get(storedKey(key)) ?? undefined
  }

  put(key: Buffer, value: Buffer | null): void {
    storedKey(key)
    this.pending.set(key.toString('latin1'), value === null ? null : Buffer.from(value))
    if (this.pending.size >= MAX_PENDING) this.flush()
  }

  range(from: Buffer | undefined, to: Buffer | undefined): [Buffer, Buffer][] {
    if (from !== undefined && to !== undefined && Buffer.compare(from, to) > 0) return []
    // Few writes wait between commits: merging them into the scan is cheaper than a flush per read.
    if (this.pending.size > 0) this.flush()
    const start = from === undefined ? Buffer.alloc(1) : storedKey(from)
    const end = to === undefined ? Buffer.from([1]) : after(storedKey(to))
    const out: [Buffer, Buffer][] = []
    for (const { key, value } of this.db.getRange({ start, end })) {
      out.push([Buffer.from(key.subarray(1)), Buffer.from(value)])
    }
    return out
  }

  size(): number {
    return (this.db.getStats() as { entryCount: number }).entryCount + [...this.pending.values()].filter((v) => v !== null).length
  }

  clear(): void {
    this.pending.clear()
    this.db.clearSync()
  }

  flush(): void {
    if (this.pending.size === 0) return
    const batch = this.pending
    this.pending = new Map()
    this.env.transaction(() => {
      for (const [k, v] of batch) {
        const key = storedKey(Buffer.from(k, 'latin1'))
        if (v === null) void this.db.remove(key)
        else void this.db.put(key, v)
      }
    })
  }

  /** Drops this sub-database (a segment past retention). */
  drop(): void {
    this.pending.clear()
    this.db.dropSync()
  }
}
