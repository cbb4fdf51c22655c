import { closeSync, fdatasync, fsyncSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { Reader, Writer, crc32c } from '@tidelog/protocol'
import { writeFileAtomicSync } from '../log/checkpoint.js'
import type { Logger } from '../logger.js'

/** Where committed offsets and group metadata live, under the data directory. */
export const OFFSETS_DIR = '__consumer_offsets'
export const OFFSETS_FILE = 'offsets.log'

// "TLCO" then a format version: a file we did not write is refused, never truncated.
const MAGIC = 0x544c434f
const FORMAT_VERSION = 1
const FILE_HEADER_BYTES = 8
/** Each record: int32 payload length, uint32 CRC32C of the payload, payload. */
const RECORD_HEADER_BYTES = 8
/** A group record of thousands of members stays far below this; more is damage. */
const MAX_RECORD_BYTES = 64 * 1024 * 1024

const OFFSET_COMMIT = 1
const OFFSET_TOMBSTONE = 2
const GROUP_METADATA = 3
const GROUP_TOMBSTONE = 4

/** Rewrite the file once it is this much larger than the live data it held at the last rewrite. */
const COMPACT_RATIO = 4
const COMPACT_MIN_BYTES = 16 * 1024 * 1024

export interface CommittedOffset {
  offset: bigint
  /** -1 when the client sent none. */
  leaderEpoch: number
  /** Kafka stores a null metadata as "". */
  metadata: string
  commitTimestamp: number
  /** Set only by OffsetCommit v2-4 with an explicit retention; -1 otherwise. */
  expireTimestamp: number
}

export interface OffsetCommit extends CommittedOffset {
  topic: string
  partition: number
}

/** A member as the group's metadata record keeps it (Kafka's GroupMetadataValue). */
export interface StoredMember {
  memberId: string
  groupInstanceId: string | null
  clientId: string
  clientHost: string
  rebalanceTimeoutMs: number
  sessionTimeoutMs: number
  /** Its metadata for the group's chosen protocol. */
  subscription: Uint8Array
  assignment: Uint8Array
}

export interface StoredGroup {
  protocolType: string | null
  generationId: number
  protocolName: string | null
  leaderId: string | null
  /** When the group entered its current state (offset expiry of empty groups counts from it). */
  stateTimestamp: number
  members: StoredMember[]
}

export interface OffsetsStoreOptions {
  /** fsync once this many records are unflushed (the broker's flush.messages); Infinity: page cache. */
  flushMessages?: number
  /** fsync at least this often (the broker's flush.ms); Infinity: never on a timer. */
  flushMs?: number
}

type TopicOffsets = Map<number, CommittedOffset>

/**
 * Committed offsets and group metadata, durable across restarts: an
 * append-only file of length-prefixed, CRC32C-checked records (commits,
 * offset tombstones, group metadata, group tombstones), the same facts Kafka
 * keeps in __consumer_offsets. Appends are single synchronous writes, so an
 * acknowledged commit survives a process crash through the page cache; fsync
 * follows the broker's flush policy. On open the file is replayed up to the
 * first damaged record and rewritten compacted, atomically (temp file, fsync,
 * rename); it is compacted again on close and whenever it outgrows its live
 * content.
 */
export class OffsetsStore {
  private readonly offsets = new Map<string, Map<string, TopicOffsets>>()
  private readonly groups = new Map<string, StoredGroup>()
  private readonly path: string
  private fd = -1
  private fileBytes = 0
  private liveBytesAtCompaction = 0
  private unflushed = 0
  private flushing: Promise<void> | null = null
  private flushAgain: Promise<void> | null = null
  private lastFlush = Date.now()
  private compactWanted = false
  private readonly flushMessages: number
  private readonly flushMs: number
  private readonly flushTimer: NodeJS.Timeout | undefined
  private closed = false

  private constructor(
    readonly dir: string,
    private readonly logger: Logger,
    opts: OffsetsStoreOptions,
  ) {
    this.path = join(dir, OFFSETS_FILE)
    this.flushMessages = opts.flushMessages ?? Infinity
    this.flushMs = opts.flushMs ?? Infinity
    if (Number.isFinite(this.flushMs)) {
      this.flushTimer = setInterval(() => {
        if (this.unflushed > 0 && Date.now() - this.lastFlush >= this.flushMs) {
          this.flush().catch((err: unknown) => this.logger.error(`${this.path}: fsync failed: ${String(err)}`))
        }
      }, Math.max(10, Math.min(this.flushMs, 1000)))
      this.flushTimer.unref()
    }
  }

  /** Loads `<dataDir>/__consumer_offsets/offsets.log` (creating it when absent) and compacts it. */
  static open(dataDir: string, logger: Logger, opts: OffsetsStoreOptions = {}): OffsetsStore {
    const dir = join(dataDir, OFFSETS_DIR)
    mkdirSync(dir, { recursive: true })
    const store = new OffsetsStore(dir, logger, opts)
    try {
      store.load()
      store.compact()
    } catch (err) {
      store.closeQuietly()
      throw err
    }
    return store
  }

  // --- reads -------------------------------------------------------------------------------

  get(group: string, topic: string, partition: number): CommittedOffset | undefined {
    return this.offsets.get(group)?.get(topic)?.get(partition)
  }

  /** Every committed offset of a group, by topic then partition. */
  groupOffsets(group: string): ReadonlyMap<string, ReadonlyMap<number, CommittedOffset>> {
    return this.offsets.get(group) ?? new Map<string, TopicOffsets>()
  }

  hasOffsets(group: string): boolean {
    return this.offsets.has(group)
  }

  /** Groups that have committed offsets. */
  groupIds(): string[] {
    return [...this.offsets.keys()]
  }

  /** The last metadata stored for each group. */
  storedGroups(): ReadonlyMap<string, StoredGroup> {
    return this.groups
  }

  // --- writes: each is one append, made before memory changes so a failed write changes nothing ---

  commit(group: string, commits: readonly OffsetCommit[]): void {
    if (commits.length === 0) return
    const w = new Writer(64 * commits.length + 64)
    for (const c of commits) writeOffset(w, group, c.topic, c.partition, c)
    this.append(w.finish(), commits.length)
    for (const c of commits) this.applyCommit(group, c.topic, c.partition, c)
  }

  /** Removes offsets; returns how many existed. */
  deleteOffsets(group: string, partitions: readonly { topic: string; partition: number }[]): number {
    const present = partitions.filter((p) => this.get(group, p.topic, p.partition) !== undefined)
    if (present.length === 0) return 0
    const w = new Writer(32 * present.length + 32)
    for (const p of present) {
      const at = beginRecord(w, OFFSET_TOMBSTONE)
      w.string(group).string(p.topic).int32(p.partition)
      endRecord(w, at)
    }
    this.append(w.finish(), present.length)
    for (const p of present) this.applyTombstone(group, p.topic, p.partition)
    return present.length
  }

  storeGroup(groupId: string, g: StoredGroup): void {
    this.append(encodeGroup(groupId, g), 1)
    this.groups.set(groupId, g)
  }

  /** Forgets a group: its metadata and every offset it committed. */
  deleteGroup(groupId: string): void {
    if (!this.groups.has(groupId) && !this.offsets.has(groupId)) return
    const w = new Writer(64)
    const at = beginRecord(w, GROUP_TOMBSTONE)
    w.string(groupId)
    endRecord(w, at)
    this.append(w.finish(), 1)
    this.groups.delete(groupId)
    this.offsets.delete(groupId)
  }

  /** Resolves once what was appended is as durable as the flush policy asks (fsynced, or left to the page cache). */
  durable(): Promise<void> {
    return this.unflushed >= this.flushMessages ? this.flush() : Promise.resolve()
  }

  /** fsyncs everything appended so far. Concurrent calls share the work. */
  flush(): Promise<void> {
    if (this.flushing !== null) {
      this.flushAgain ??= this.flushing.then(
        () => {
          this.flushAgain = null
          return this.flush()
        },
        () => {
          this.flushAgain = null
          return this.flush()
        },
      )
      return this.flushAgain
    }
    if (this.fd < 0 || this.unflushed === 0) return Promise.resolve()
    const fd = this.fd
    const pending = this.unflushed
    this.flushing = new Promise<void>((resolve, reject) => {
      fdatasync(fd, (err) => {
        this.flushing = null
        if (err !== null) {
          reject(err)
          return
        }
        this.unflushed = Math.max(0, this.unflushed - pending)
        this.lastFlush = Date.now()
        // The descriptor could not be swapped while the fsync used it.
        if (this.compactWanted) this.tryCompact()
        resolve()
      })
    })
    return this.flushing
  }

  /** Compacts, fsyncs and closes the file (shutdown). Appends fail from the moment it is called. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    if (this.flushTimer !== undefined) clearInterval(this.flushTimer)
    // The descriptor is not swapped under an fsync that still uses it.
    while (this.flushing !== null) await this.flushing.catch(() => {})
    try {
      this.compact()
    } finally {
      this.closeQuietly()
    }
  }

  get isClosed(): boolean {
    return this.closed
  }

  // --- internals ---------------------------------------------------------------------------

  private append(buf: Buffer, records: number): void {
    if (this.closed || this.fd < 0) throw new Error(`${this.path} is closed`)
    let done = 0
    while (done < buf.length) done += writeSync(this.fd, buf, done, buf.length - done)
    this.fileBytes += buf.length
    this.unflushed += records
    if (this.fileBytes > COMPACT_MIN_BYTES && this.fileBytes > COMPACT_RATIO * this.liveBytesAtCompaction) {
      this.compactWanted = true
      this.tryCompact()
    }
  }

  private tryCompact(): void {
    if (this.flushing !== null || this.closed) return
    this.compactWanted = false
    try {
      this.compact()
    } catch (err) {
      // The old file is intact and still open for appends; try again after more growth.
      this.logger.error(`${this.path}: compaction failed: ${(err as Error).message}`)
      this.liveBytesAtCompaction = this.fileBytes
    }
  }

  private load(): void {
    let data: Buffer
    try {
      data = readFileSync(this.path)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
      throw err
    }
    if (data.length === 0) return
    if (data.length < FILE_HEADER_BYTES || data.readUInt32BE(0) !== MAGIC) {
      throw new Error(`${this.path} is not a tidelog offsets file; move it away to start with no committed offsets`)
    }
    const version = data.readInt32BE(4)
    if (version !== FORMAT_VERSION) throw new Error(`${this.path} has format version ${version}; this broker reads version ${FORMAT_VERSION}`)
    let pos = FILE_HEADER_BYTES
    let records = 0
    let damage: string | undefined
    while (pos < data.length) {
      if (data.length - pos < RECORD_HEADER_BYTES) {
        damage = 'a truncated record header'
        break
      }
      const len = data.readInt32BE(pos)
      if (len <= 0 || len > MAX_RECORD_BYTES || len > data.length - pos - RECORD_HEADER_BYTES) {
        damage = `a record length of ${len}`
        break
      }
      const start = pos + RECORD_HEADER_BYTES
      if (crc32c(data, start, start + len) !== data.readUInt32BE(pos + 4)) {
        damage = 'a CRC mismatch'
        break
      }
      try {
        this.replay(new Reader(data, start, start + len))
      } catch (err) {
        damage = `an unreadable record (${(err as Error).message})`
        break
      }
      pos = start + len
      records++
    }
    if (damage !== undefined) {
      // As the partition logs recover: keep every whole record before the damage (a crash can only
      // tear the tail), and say how much is dropped. The rewrite that follows truncates the file.
      this.logger.warn(`${this.path}: ${damage} at byte ${pos}; keeping the ${records} record(s) before it, dropping ${data.length - pos} byte(s)`)
    }
    this.logger.info(`loaded ${this.countOffsets()} committed offset(s) of ${this.offsets.size} group(s) and ${this.groups.size} group record(s)`)
  }

  private replay(r: Reader): void {
    const type = r.int8()
    const group = r.string()
    switch (type) {
      case OFFSET_COMMIT: {
        const topic = r.string()
        const partition = r.int32()
        const offset = r.int64()
        const leaderEpoch = r.int32()
        const metadata = r.string()
        const commitTimestamp = Number(r.int64())
        const expireTimestamp = Number(r.int64())
        this.applyCommit(group, topic, partition, { offset, leaderEpoch, metadata, commitTimestamp, expireTimestamp })
        break
      }
      case OFFSET_TOMBSTONE: {
        const topic = r.string()
        this.applyTombstone(group, topic, r.int32())
        break
      }
      case GROUP_METADATA: {
        const protocolType = r.nullableString()
        const generationId = r.int32()
        const protocolName = r.nullableString()
        const leaderId = r.nullableString()
        const stateTimestamp = Number(r.int64())
        const n = r.arrayLength(false)
        if (n < 0) r.fail('null member list')
        const members: StoredMember[] = []
        for (let i = 0; i < n; i++) {
          members.push({
            memberId: r.string(),
            groupInstanceId: r.nullableString(),
            clientId: r.string(),
            clientHost: r.string(),
            rebalanceTimeoutMs: r.int32(),
            sessionTimeoutMs: r.int32(),
            // Copies, so the whole file read at startup is not kept alive by a few members.
            subscription: Buffer.from(r.bytes()),
            assignment: Buffer.from(r.bytes()),
          })
        }
        this.groups.set(group, { protocolType, generationId, protocolName, leaderId, stateTimestamp, members })
        break
      }
      case GROUP_TOMBSTONE:
        this.groups.delete(group)
        this.offsets.delete(group)
        break
      default:
        r.fail(`unknown record type ${type}`)
    }
    if (r.remaining !== 0) r.fail(`${r.remaining} byte(s) after a type ${type} record`)
  }

  private applyCommit(group: string, topic: string, partition: number, c: CommittedOffset): void {
    let topics = this.offsets.get(group)
    if (topics === undefined) this.offsets.set(group, (topics = new Map()))
    let parts = topics.get(topic)
    if (parts === undefined) topics.set(topic, (parts = new Map()))
    parts.set(partition, {
      offset: c.offset,
      leaderEpoch: c.leaderEpoch,
      metadata: c.metadata,
      commitTimestamp: c.commitTimestamp,
      expireTimestamp: c.expireTimestamp,
    })
  }

  private applyTombstone(group: string, topic: string, partition: number): void {
    const topics = this.offsets.get(group)
    const parts = topics?.get(topic)
    if (topics === undefined || parts === undefined) return
    parts.delete(partition)
    if (parts.size === 0) topics.delete(topic)
    if (topics.size === 0) this.offsets.delete(group)
  }

  private countOffsets(): number {
    let n = 0
    for (const topics of this.offsets.values()) for (const parts of topics.values()) n += parts.size
    return n
  }

  /** The live state as one record per group metadata and per offset. */
  private snapshot(): Buffer {
    const w = new Writer(4096)
    w.int32(MAGIC).int32(FORMAT_VERSION)
    for (const [groupId, g] of this.groups) w.raw(encodeGroup(groupId, g))
    for (const [group, topics] of this.offsets) {
      for (const [topic, parts] of topics) {
        for (const [partition, c] of parts) writeOffset(w, group, topic, partition, c)
      }
    }
    return w.finish()
  }

  /** Rewrites the file with the live state only, atomically, and reopens it for appends. */
  private compact(): void {
    const data = this.snapshot()
    writeFileAtomicSync(this.path, data)
    if (this.fd >= 0) closeSync(this.fd)
    this.fd = -1
    this.fileBytes = data.length
    this.liveBytesAtCompaction = data.length
    // The rewrite was fsynced: nothing is pending any more.
    this.unflushed = 0
    if (!this.closed) this.fd = openSync(this.path, 'a')
  }

  private closeQuietly(): void {
    if (this.flushTimer !== undefined) clearInterval(this.flushTimer)
    if (this.fd >= 0) {
      try {
        fsyncSync(this.fd)
      } catch {
        // Best effort: the last compaction already made the state durable.
      }
      closeSync(this.fd)
      this.fd = -1
    }
  }
}

function beginRecord(w: Writer, type: number): number {
  const at = w.pos
  w.int32(0).int32(0).int8(type)
  return at
}

function endRecord(w: Writer, at: number): void {
  const start = at + RECORD_HEADER_BYTES
  const len = w.pos - start
  w.buf.writeInt32BE(len, at)
  w.buf.writeUInt32BE(crc32c(w.buf, start, w.pos), at + 4)
}

function writeOffset(w: Writer, group: string, topic: string, partition: number, c: CommittedOffset): void {
  const at = beginRecord(w, OFFSET_COMMIT)
  w.string(group).string(topic).int32(partition).int64(c.offset).int32(c.leaderEpoch).string(c.metadata)
  w.int64(BigInt(c.commitTimestamp)).int64(BigInt(c.expireTimestamp))
  endRecord(w, at)
}

function encodeGroup(groupId: string, g: StoredGroup): Buffer {
  const w = new Writer(256)
  const at = beginRecord(w, GROUP_METADATA)
  w.string(groupId).nullableString(g.protocolType).int32(g.generationId).nullableString(g.protocolName).nullableString(g.leaderId)
  w.int64(BigInt(g.stateTimestamp)).int32(g.members.length)
  for (const m of g.members) {
    w.string(m.memberId).nullableString(m.groupInstanceId).string(m.clientId).string(m.clientHost)
    w.int32(m.rebalanceTimeoutMs).int32(m.sessionTimeoutMs).bytes(m.subscription).bytes(m.assignment)
  }
  endRecord(w, at)
  return w.finish()
}
