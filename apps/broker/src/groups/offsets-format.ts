import { type Reader, Writer } from '@tidelog/protocol'
import { RECORD_HEADER_BYTES, beginRecord, sealRecord } from './record-file.js'

// The byte layout of <dataDir>/__consumer_offsets/offsets.log, kept apart from the store's I/O.

/** "TLCO": a file we did not write is refused, never truncated. */
export const MAGIC = 0x544c434f
/**
 * Bumped when a later release writes records this one cannot read; older
 * versions are migrated on open. 2 added the pending transactional offsets
 * and their completion (KIP-98's TxnOffsetCommit); version 1 files hold none.
 */
export const FORMAT_VERSION = 2
/**
 * The largest record payload this store writes. Kafka refuses group metadata
 * larger than the offsets topic's max.message.bytes when it appends it; here
 * the check sits in the encoder, so no record the loader would have to skip is
 * ever written.
 */
export const MAX_RECORD_BYTES = 64 * 1024 * 1024

const OFFSET_COMMIT = 1
const OFFSET_TOMBSTONE = 2
const GROUP_METADATA = 3
const GROUP_TOMBSTONE = 4
const PENDING_TXN_OFFSET = 5
const TXN_OFFSETS_END = 6

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

/**
 * A record over MAX_RECORD_BYTES was refused before anything was written
 * (Kafka's RecordListTooLargeException on the offsets topic). The coordinator
 * answers it as Kafka does: UNKNOWN_SERVER_ERROR for group metadata,
 * INVALID_COMMIT_OFFSET_SIZE for offsets.
 */
export class RecordListTooLargeError extends Error {
  constructor(
    readonly what: string,
    readonly bytes: number,
  ) {
    super(`${what} would be a ${bytes}-byte record; the offsets store takes at most ${MAX_RECORD_BYTES}`)
    this.name = 'RecordListTooLargeError'
  }
}

/** The offsets file was written by a newer release (or is not ours): refused, never rewritten. */
export class OffsetsFormatError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'OffsetsFormatError'
  }
}

export type OffsetsRecord =
  | { type: 'commit'; group: string; topic: string; partition: number; value: CommittedOffset }
  | { type: 'tombstone'; group: string; topic: string; partition: number }
  | { type: 'group'; group: string; value: StoredGroup }
  | { type: 'groupTombstone'; group: string }
  | { type: 'pendingTxnOffset'; group: string; producerId: bigint; topic: string; partition: number; value: CommittedOffset }
  | { type: 'txnOffsetsEnd'; group: string; producerId: bigint; commit: boolean }

export function writeFileHeader(w: Writer): void {
  w.uint32(MAGIC).int32(FORMAT_VERSION)
}

/**
 * `limit` false only when a compaction copies records that are already in the
 * file (a release before the limit may have written a bigger one).
 */
function endRecord(w: Writer, at: number, what: () => string, limit = true): void {
  const len = w.pos - at - RECORD_HEADER_BYTES
  if (limit && len > MAX_RECORD_BYTES) throw new RecordListTooLargeError(what(), len)
  sealRecord(w, at)
}

export function writeOffset(w: Writer, group: string, topic: string, partition: number, c: CommittedOffset, limit = true): void {
  const at = beginRecord(w, OFFSET_COMMIT)
  w.string(group).string(topic).int32(partition).int64(c.offset).int32(c.leaderEpoch).string(c.metadata)
  w.int64(BigInt(c.commitTimestamp)).int64(BigInt(c.expireTimestamp))
  endRecord(w, at, () => `the offset of group ${group} for ${topic}-${partition}`, limit)
}

export function writeOffsetTombstone(w: Writer, group: string, topic: string, partition: number): void {
  const at = beginRecord(w, OFFSET_TOMBSTONE)
  w.string(group).string(topic).int32(partition)
  endRecord(w, at, () => `the offset tombstone of group ${group} for ${topic}-${partition}`)
}

export function writeGroup(w: Writer, groupId: string, g: StoredGroup, limit = true): void {
  const at = beginRecord(w, GROUP_METADATA)
  w.string(groupId).nullableString(g.protocolType).int32(g.generationId).nullableString(g.protocolName).nullableString(g.leaderId)
  w.int64(BigInt(g.stateTimestamp)).int32(g.members.length)
  for (const m of g.members) {
    w.string(m.memberId).nullableString(m.groupInstanceId).string(m.clientId).string(m.clientHost)
    w.int32(m.rebalanceTimeoutMs).int32(m.sessionTimeoutMs).bytes(m.subscription).bytes(m.assignment)
  }
  endRecord(w, at, () => `the metadata of group ${groupId} (generation ${g.generationId}, ${g.members.length} member(s))`, limit)
}

/** An offset a transaction committed, not visible until its commit marker (Kafka writes it in the transaction's batch). */
export function writePendingTxnOffset(w: Writer, group: string, producerId: bigint, topic: string, partition: number, c: CommittedOffset, limit = true): void {
  const at = beginRecord(w, PENDING_TXN_OFFSET)
  w.string(group).int64(producerId).string(topic).int32(partition).int64(c.offset).int32(c.leaderEpoch).string(c.metadata)
  w.int64(BigInt(c.commitTimestamp)).int64(BigInt(c.expireTimestamp))
  endRecord(w, at, () => `the transactional offset of group ${group} for ${topic}-${partition}`, limit)
}

/** The transaction marker for a group's pending offsets: commit makes them the group's offsets, abort drops them. */
export function writeTxnOffsetsEnd(w: Writer, group: string, producerId: bigint, commit: boolean): void {
  const at = beginRecord(w, TXN_OFFSETS_END)
  w.string(group).int64(producerId).int8(commit ? 1 : 0)
  endRecord(w, at, () => `the transaction marker of group ${group}`)
}

export function writeGroupTombstone(w: Writer, groupId: string): void {
  const at = beginRecord(w, GROUP_TOMBSTONE)
  w.string(groupId)
  endRecord(w, at, () => `the tombstone of group ${groupId}`)
}

export function encodeGroup(groupId: string, g: StoredGroup): Buffer {
  let size = 256
  for (const m of g.members) size += 64 + m.subscription.length + m.assignment.length
  const w = new Writer(size)
  writeGroup(w, groupId, g)
  return w.finish()
}

/** Decodes one record's payload (its CRC already checked); throws a DecodeError on anything malformed. */
export function readRecord(r: Reader): OffsetsRecord {
  const type = r.int8()
  const group = r.string()
  let rec: OffsetsRecord
  switch (type) {
    case OFFSET_COMMIT: {
      const topic = r.string()
      const partition = r.int32()
      const offset = r.int64()
      const leaderEpoch = r.int32()
      const metadata = r.string()
      const commitTimestamp = Number(r.int64())
      const expireTimestamp = Number(r.int64())
      rec = { type: 'commit', group, topic, partition, value: { offset, leaderEpoch, metadata, commitTimestamp, expireTimestamp } }
      break
    }
    case OFFSET_TOMBSTONE: {
      const topic = r.string()
      rec = { type: 'tombstone', group, topic, partition: r.int32() }
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
      rec = { type: 'group', group, value: { protocolType, generationId, protocolName, leaderId, stateTimestamp, members } }
      break
    }
    case GROUP_TOMBSTONE:
      rec = { type: 'groupTombstone', group }
      break
    case PENDING_TXN_OFFSET: {
      const producerId = r.int64()
      const topic = r.string()
      const partition = r.int32()
      const offset = r.int64()
      const leaderEpoch = r.int32()
      const metadata = r.string()
      const commitTimestamp = Number(r.int64())
      const expireTimestamp = Number(r.int64())
      rec = { type: 'pendingTxnOffset', group, producerId, topic, partition, value: { offset, leaderEpoch, metadata, commitTimestamp, expireTimestamp } }
      break
    }
    case TXN_OFFSETS_END:
      rec = { type: 'txnOffsetsEnd', group, producerId: r.int64(), commit: r.int8() !== 0 }
      break
    default:
      r.fail(`unknown record type ${type}`)
  }
  if (r.remaining !== 0) r.fail(`${r.remaining} byte(s) after a type ${type} record`)
  return rec
}
