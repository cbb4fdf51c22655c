import { type Reader, Writer } from '@tidelog/protocol'
import { join } from 'node:path'
import type { Logger } from '../logger.js'
import {
  type CommittedOffset,
  FORMAT_VERSION,
  MAGIC,
  type OffsetCommit,
  OffsetsFormatError,
  readRecord,
  encodeGroup,
  writeGroup,
  writeGroupTombstone,
  writeOffset,
  writeOffsetTombstone,
  writePendingTxnOffset,
  writeTxnOffsetsEnd,
  type StoredGroup,
} from './offsets-format.js'
import { RecordFile, type RecordFileOptions, type SnapshotSink } from './record-file.js'

export type { CommittedOffset, OffsetCommit, StoredGroup, StoredMember } from './offsets-format.js'
export { MAX_RECORD_BYTES, OffsetsFormatError, RecordListTooLargeError } from './offsets-format.js'

/** Where committed offsets and group metadata live, under the data directory. */
export const OFFSETS_DIR = '__consumer_offsets'
export const OFFSETS_FILE = 'offsets.log'

export type OffsetsStoreOptions = RecordFileOptions

type TopicOffsets = Map<number, CommittedOffset>
/** A transaction's offsets for one group, by topic then partition (Kafka's pendingTransactionalOffsetCommits). */
type PendingOffsets = Map<string, TopicOffsets>

const FORMAT = {
  magic: MAGIC,
  version: FORMAT_VERSION,
  kind: 'offsets',
  formatError: (message: string) => new OffsetsFormatError(message),
}

/**
 * Committed offsets and group metadata, durable across restarts: the same
 * facts Kafka keeps in __consumer_offsets (commits, offset tombstones, group
 * metadata, group tombstones, and the offsets of open transactions with the
 * marker that ends them), in a RecordFile.
 */
export class OffsetsStore extends RecordFile {
  private readonly offsets = new Map<string, Map<string, TopicOffsets>>()
  private readonly groups = new Map<string, StoredGroup>()
  /** group -> producer id -> the offsets its open transaction committed. */
  private readonly pending = new Map<string, Map<bigint, PendingOffsets>>()

  private constructor(dir: string, logger: Logger, opts: OffsetsStoreOptions) {
    super(dir, OFFSETS_FILE, logger, FORMAT, opts)
  }

  /** Loads `<dataDir>/__consumer_offsets/offsets.log` (creating it when absent) and compacts it. */
  static open(dataDir: string, logger: Logger, opts: OffsetsStoreOptions = {}): OffsetsStore {
    const store = new OffsetsStore(join(dataDir, OFFSETS_DIR), logger, opts)
    store.openFile()
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

  // --- writes: each is encoded (and size-checked) and appended before memory changes, so a
  // refused or failed write changes nothing; compaction is considered only once memory holds it ---

  commit(group: string, commits: readonly OffsetCommit[]): void {
    if (commits.length === 0) return
    const w = new Writer(64 * commits.length + 64)
    for (const c of commits) writeOffset(w, group, c.topic, c.partition, c)
    this.append(w.finish(), commits.length)
    for (const c of commits) this.applyCommit(group, c.topic, c.partition, c)
    this.maybeCompact()
  }

  /** Removes offsets; returns how many existed. */
  deleteOffsets(group: string, partitions: readonly { topic: string; partition: number }[]): number {
    const present = partitions.filter((p) => this.get(group, p.topic, p.partition) !== undefined)
    if (present.length === 0) return 0
    const w = new Writer(32 * present.length + 32)
    for (const p of present) writeOffsetTombstone(w, group, p.topic, p.partition)
    this.append(w.finish(), present.length)
    for (const p of present) this.applyTombstone(group, p.topic, p.partition)
    this.maybeCompact()
    return present.length
  }

  /** Throws RecordListTooLargeError, having written nothing, when the record would exceed MAX_RECORD_BYTES. */
  storeGroup(groupId: string, g: StoredGroup): void {
    this.append(encodeGroup(groupId, g), 1)
    this.groups.set(groupId, g)
    this.maybeCompact()
  }

  /** Forgets a group: its metadata and every offset it committed. */
  deleteGroup(groupId: string): void {
    if (!this.groups.has(groupId) && !this.offsets.has(groupId) && !this.pending.has(groupId)) return
    const w = new Writer(64)
    writeGroupTombstone(w, groupId)
    this.append(w.finish(), 1)
    this.groups.delete(groupId)
    this.offsets.delete(groupId)
    this.pending.delete(groupId)
    this.maybeCompact()
  }

  // --- transactional offsets (KIP-98, KIP-447) --------------------------------------------

  /** A transaction's offsets, kept apart until its marker; a later commit of the same partition in it replaces the earlier. */
  commitPending(group: string, producerId: bigint, commits: readonly OffsetCommit[]): void {
    if (commits.length === 0) return
    const w = new Writer(64 * commits.length + 64)
    for (const c of commits) writePendingTxnOffset(w, group, producerId, c.topic, c.partition, c)
    this.append(w.finish(), commits.length)
    for (const c of commits) this.applyPending(group, producerId, c.topic, c.partition, c)
    this.maybeCompact()
  }

  /** The transaction marker for the group: commit makes its pending offsets the group's, abort drops them. */
  completePending(group: string, producerId: bigint, commit: boolean): void {
    if (this.pending.get(group)?.has(producerId) !== true) return
    const w = new Writer(64)
    writeTxnOffsetsEnd(w, group, producerId, commit)
    this.append(w.finish(), 1)
    this.applyEnd(group, producerId, commit)
    this.maybeCompact()
  }

  /** Whether any open transaction holds an offset for the partition (OffsetFetch's UNSTABLE_OFFSET_COMMIT). */
  hasPending(group: string, topic: string, partition: number): boolean {
    const byProducer = this.pending.get(group)
    if (byProducer === undefined) return false
    for (const topics of byProducer.values()) if (topics.get(topic)?.has(partition) === true) return true
    return false
  }

  /** Groups holding offsets of open transactions. */
  pendingGroupIds(): string[] {
    return [...this.pending.keys()]
  }

  /** Whether the group has pending offsets of any transaction (a group with them is not empty for deletion). */
  hasPendingFor(group: string): boolean {
    return this.pending.has(group)
  }

  private applyPending(group: string, producerId: bigint, topic: string, partition: number, c: CommittedOffset): void {
    let byProducer = this.pending.get(group)
    if (byProducer === undefined) this.pending.set(group, (byProducer = new Map()))
    let topics = byProducer.get(producerId)
    if (topics === undefined) byProducer.set(producerId, (topics = new Map()))
    let parts = topics.get(topic)
    if (parts === undefined) topics.set(topic, (parts = new Map()))
    parts.set(partition, { ...c })
  }

  private applyEnd(group: string, producerId: bigint, commit: boolean): void {
    const byProducer = this.pending.get(group)
    const topics = byProducer?.get(producerId)
    if (byProducer === undefined || topics === undefined) return
    byProducer.delete(producerId)
    if (byProducer.size === 0) this.pending.delete(group)
    if (!commit) return
    for (const [topic, parts] of topics) for (const [partition, c] of parts) this.applyCommit(group, topic, partition, c)
  }

  // --- RecordFile hooks --------------------------------------------------------------------

  protected replay(r: Reader): void {
    const rec = readRecord(r)
    switch (rec.type) {
      case 'commit':
        this.applyCommit(rec.group, rec.topic, rec.partition, rec.value)
        break
      case 'tombstone':
        this.applyTombstone(rec.group, rec.topic, rec.partition)
        break
      case 'group':
        this.groups.set(rec.group, rec.value)
        break
      case 'groupTombstone':
        this.groups.delete(rec.group)
        this.offsets.delete(rec.group)
        this.pending.delete(rec.group)
        break
      case 'pendingTxnOffset':
        this.applyPending(rec.group, rec.producerId, rec.topic, rec.partition, rec.value)
        break
      case 'txnOffsetsEnd':
        this.applyEnd(rec.group, rec.producerId, rec.commit)
        break
    }
  }

  /** One record per group metadata, per offset and per pending transactional offset. */
  protected *liveRecords(sink: SnapshotSink): Generator<void> {
    // Records already in the file are copied as they are, even one a release before the limit wrote.
    for (const [groupId, g] of this.groups) {
      writeGroup(sink.w, groupId, g, false)
      yield
    }
    for (const [group, topics] of this.offsets) {
      for (const [topic, parts] of topics) {
        for (const [partition, c] of parts) {
          writeOffset(sink.w, group, topic, partition, c, false)
          yield
        }
      }
    }
    for (const [group, byProducer] of this.pending) {
      for (const [producerId, topics] of byProducer) {
        for (const [topic, parts] of topics) {
          for (const [partition, c] of parts) {
            writePendingTxnOffset(sink.w, group, producerId, topic, partition, c, false)
            yield
          }
        }
      }
    }
  }

  protected loadedSummary(): string {
    let pending = 0
    for (const byProducer of this.pending.values()) pending += byProducer.size
    return `loaded ${this.countOffsets()} committed offset(s) of ${this.offsets.size} group(s), ${this.groups.size} group record(s) and ${pending} open transaction(s) with offsets`
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
}
