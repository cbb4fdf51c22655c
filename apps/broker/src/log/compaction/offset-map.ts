import { md5Into } from './md5.js'

/** Kafka's SkimpyOffsetMap entry: a 16-byte MD5 of the key and an 8-byte offset. */
export const ENTRY_BYTES = 24
/** Kafka's log.cleaner.io.buffer.load.factor default. */
export const DEFAULT_LOAD_FACTOR = 0.9
// The table starts small and doubles up to the slots the buffer allows, so a log with a
// few keys does not make the cleaner hold (and zero) the whole 128 MiB buffer.
const INITIAL_SLOTS = 1 << 14

/**
 * The cleaner's key -> latest offset map, as Kafka's SkimpyOffsetMap: keys are
 * kept only as their MD5 hash (two keys with one hash count as one key, as in
 * Kafka), 24 bytes an entry, in a table of at most
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
  /** Four words of MD5 per slot (all zero: empty), and the slot's offset. */
  private hashes: Int32Array
  private offsets: Float64Array
  private entries = 0
  private readonly h = new Int32Array(4)
  /** The last offset of the last batch the map covers, -1 before any. */
  latestOffset = -1

  constructor(bufferBytes: number, loadFactor = DEFAULT_LOAD_FACTOR) {
    this.maxSlots = Math.max(1, Math.floor(bufferBytes / ENTRY_BYTES))
    this.maxEntries = Math.max(1, Math.floor(this.maxSlots * loadFactor))
    this.slots = Math.min(this.maxSlots, INITIAL_SLOTS)
    this.hashes = new Int32Array(this.slots * 4)
    this.offsets = new Float64Array(this.slots)
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

  private hash(key: Uint8Array, start: number, end: number): void {
    const h = this.h
    md5Into(key, start, end, h)
    // All zero marks an empty slot: the one hash in 2^128 that is zero takes the next value.
    if ((h[0]! | h[1]! | h[2]! | h[3]!) === 0) h[3] = 1
  }

  /** The slot holding the hash in `this.h`, or the empty one where it would go; -1 when every slot holds another key. */
  private slotOf(hashes: Int32Array, slots: number, h: Int32Array): number {
    let i = (h[0]! >>> 0) % slots
    for (let probes = 0; probes < slots; probes++) {
      const at = i * 4
      const a = hashes[at]!
      const b = hashes[at + 1]!
      const c = hashes[at + 2]!
      const d = hashes[at + 3]!
      if ((a | b | c | d) === 0 || (a === h[0] && b === h[1] && c === h[2] && d === h[3])) return i
      i = i + 1 === slots ? 0 : i + 1
    }
    return -1
  }

  private grow(): void {
    const slots = Math.min(this.maxSlots, this.slots * 2)
    const hashes = new Int32Array(slots * 4)
    const offsets = new Float64Array(slots)
    const h = new Int32Array(4)
    for (let i = 0; i < this.slots; i++) {
      const at = i * 4
      h.set(this.hashes.subarray(at, at + 4))
      if ((h[0]! | h[1]! | h[2]! | h[3]!) === 0) continue
      const to = this.slotOf(hashes, slots, h)
      hashes.set(h, to * 4)
      offsets[to] = this.offsets[i]!
    }
    this.hashes = hashes
    this.offsets = offsets
    this.slots = slots
  }

  /** Records `offset` as the latest of the key in key[start, end). The caller checks isFull first. */
  put(key: Uint8Array, start: number, end: number, offset: number): void {
    // Keep the open-addressed table under the load factor while it can still double.
    if (this.slots < this.maxSlots && (this.entries + 1) / this.slots > DEFAULT_LOAD_FACTOR) this.grow()
    this.hash(key, start, end)
    const i = this.slotOf(this.hashes, this.slots, this.h)
    if (i < 0) throw new RangeError('offset map is full')
    const at = i * 4
    if ((this.hashes[at]! | this.hashes[at + 1]! | this.hashes[at + 2]! | this.hashes[at + 3]!) === 0) {
      this.hashes.set(this.h, at)
      this.entries++
    }
    this.offsets[i] = offset
  }

  /** The latest offset of the key in key[start, end), or -1 when the map does not hold it. */
  get(key: Uint8Array, start: number, end: number): number {
    this.hash(key, start, end)
    const i = this.slotOf(this.hashes, this.slots, this.h)
    if (i < 0) return -1
    const at = i * 4
    if ((this.hashes[at]! | this.hashes[at + 1]! | this.hashes[at + 2]! | this.hashes[at + 3]!) === 0) return -1
    return this.offsets[i]!
  }
}
