import * as crypto from 'node:crypto'

/** Kafka's SkimpyOffsetMap entry: a 16-byte MD5 of the key and an 8-byte offset. */
export const HASH_BYTES = 16
export const ENTRY_BYTES = HASH_BYTES + 8
/** Kafka's log.cleaner.io.buffer.load.factor default. */
export const DEFAULT_LOAD_FACTOR = 0.9
// The table starts small and doubles up to the slots the buffer allows, so a log with a
// few keys does not make the cleaner hold (and zero) the whole 128 MiB buffer.
const INITIAL_SLOTS = 1 << 14

const md5: (data: Buffer) => Buffer =
  typeof (crypto as { hash?: unknown }).hash === 'function'
    ? (data) => (crypto as unknown as { hash(alg: string, d: Buffer, enc: 'buffer'): Buffer }).hash('md5', data, 'buffer')
    : (data) => crypto.createHash('md5').update(data).digest()

function isEmpty(t: Buffer, at: number): boolean {
  return t.readUInt32BE(at) === 0 && t.readUInt32BE(at + 4) === 0 && t.readUInt32BE(at + 8) === 0 && t.readUInt32BE(at + 12) === 0
}

/**
 * The cleaner's key -> latest offset map, as Kafka's SkimpyOffsetMap: keys are
 * kept only as their MD5 hash (two keys with one hash count as one key, as in
 * Kafka), 24 bytes an entry, in a table whose final size is
 * log.cleaner.dedupe.buffer.size / 24 slots. The cleaner stops adding keys
 * once `size` reaches slots * load factor (`isFull`), and cleans only up to
 * the offset the map covered.
 */
export class OffsetMap {
  /** The slots the buffer holds: what Kafka's map has from the start. */
  readonly maxSlots: number
  /** Entries the cleaner may put before the map counts as full (slots * load factor). */
  readonly maxEntries: number
  private slots: number
  private table: Buffer
  private entries = 0
  /** The last offset of the last batch the map covers, -1 before any. */
  latestOffset = -1

  constructor(bufferBytes: number, loadFactor = DEFAULT_LOAD_FACTOR) {
    this.maxSlots = Math.max(1, Math.floor(bufferBytes / ENTRY_BYTES))
    this.maxEntries = Math.max(1, Math.floor(this.maxSlots * loadFactor))
    this.slots = Math.min(this.maxSlots, INITIAL_SLOTS)
    this.table = Buffer.alloc(this.slots * ENTRY_BYTES)
  }

  get size(): number {
    return this.entries
  }

  get isFull(): boolean {
    return this.entries >= this.maxEntries
  }

  /** Share of the buffer's slots in use (Kafka's map utilization, for max-buffer-utilization-percent). */
  get utilization(): number {
    return this.entries / this.maxSlots
  }

  /** The hash every lookup and put of `key` uses. */
  static hash(key: Buffer): Buffer {
    const h = md5(key)
    // An all-zero slot means empty: a key hashing to zero takes the next value, as only one in 2^128 would.
    if (h.readBigUInt64BE(0) === 0n && h.readBigUInt64BE(8) === 0n) h[15] = 1
    return h
  }

  /** The slot holding `hash`, or the empty one where it would go; -1 when every slot holds another key. */
  private slotOf(hash: Buffer, table: Buffer, slots: number): number {
    let i = hash.readUInt32BE(0) % slots
    for (let probes = 0; probes < slots; probes++) {
      const at = i * ENTRY_BYTES
      if (isEmpty(table, at) || table.compare(hash, 0, HASH_BYTES, at, at + HASH_BYTES) === 0) return at
      i = i + 1 === slots ? 0 : i + 1
    }
    return -1
  }

  private grow(): void {
    const slots = Math.min(this.maxSlots, this.slots * 2)
    const table = Buffer.alloc(slots * ENTRY_BYTES)
    for (let at = 0; at < this.table.length; at += ENTRY_BYTES) {
      if (isEmpty(this.table, at)) continue
      const to = this.slotOf(this.table.subarray(at, at + HASH_BYTES), table, slots)
      this.table.copy(table, to, at, at + ENTRY_BYTES)
    }
    this.table = table
    this.slots = slots
  }

  /** Records `offset` as the latest of the key hashed to `hash`. The caller checks isFull first. */
  put(hash: Buffer, offset: number): void {
    // Keep the open-addressed table under the load factor while it can still double.
    if (this.slots < this.maxSlots && (this.entries + 1) / this.slots > DEFAULT_LOAD_FACTOR) this.grow()
    const at = this.slotOf(hash, this.table, this.slots)
    if (at < 0) throw new RangeError('offset map is full')
    if (isEmpty(this.table, at)) {
      hash.copy(this.table, at, 0, HASH_BYTES)
      this.entries++
    }
    this.table.writeBigInt64BE(BigInt(offset), at + HASH_BYTES)
  }

  /** The latest offset of the key, or -1 when the map does not hold it. */
  get(hash: Buffer): number {
    const at = this.slotOf(hash, this.table, this.slots)
    if (at < 0 || isEmpty(this.table, at)) return -1
    return Number(this.table.readBigInt64BE(at + HASH_BYTES))
  }
}
