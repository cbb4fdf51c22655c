import { ErrorCodes, errorByCode } from '@tidelog/protocol'
import type { ShareFetchRequest, ShareFetchResponse, ShareFetchResponsePartitionData, ShareAcknowledgeRequestAcknowledgementBatch } from '@tidelog/protocol'
import type { BrokerContext } from '../../context.js'
import type { PartitionLog } from '../../log/index.js'
import { InvalidRecordStateError, type SharePartition } from './share-partition.js'
import { type ShareGroup, type ShareGroups, ShareError } from './share-groups.js'
import { shareAutoOffsetReset } from './settings.js'

const EMPTY = Buffer.alloc(0)
const ATTR_CONTROL = 0x20

export interface Resolved {
  topicId: string
  partition: number
  log: PartitionLog | undefined
  errorCode: number
}

export function resolvePartition(broker: BrokerContext, topicId: string, partition: number): Resolved {
  const t = broker.topics.getById(topicId)
  const log = t?.logs[partition]
  return { topicId, partition, log, errorCode: t === undefined ? ErrorCodes.UNKNOWN_TOPIC_ID : log === undefined ? ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION : ErrorCodes.NONE }
}

/** Applies a partition's acknowledgement batches; the error code to report for them. */
export function applyAcknowledgements(sp: SharePartition | undefined, batches: readonly ShareAcknowledgeRequestAcknowledgementBatch[], memberId: string, now: number): number {
  if (batches.length === 0) return ErrorCodes.NONE
  if (sp === undefined) return ErrorCodes.INVALID_RECORD_STATE
  let code: number = ErrorCodes.NONE
  for (const b of batches) {
    try {
      sp.acknowledge(Number(b.firstOffset), Number(b.lastOffset), b.acknowledgeTypes, memberId, now)
    } catch (err) {
      if (!(err instanceof InvalidRecordStateError)) throw err
      code = ErrorCodes.INVALID_RECORD_STATE
    }
  }
  return code
}

/** The first offset that can be handed out next: the lowest AVAILABLE in-flight record, else the end of the in-flight window. */
function firstAcquirable(sp: SharePartition): number {
  let first = sp.endOffset
  for (const [o, r] of sp.inFlight) if (r.state === 'AVAILABLE' && o < first) first = o
  return first
}

interface Batch {
  base: number
  last: number
  control: boolean
  bytes: Buffer
}

function splitBatches(records: Buffer): Batch[] {
  const out: Batch[] = []
  let pos = 0
  while (pos + 61 <= records.length) {
    const size = 12 + records.readInt32BE(pos + 8)
    if (pos + size > records.length) break
    const base = Number(records.readBigInt64BE(pos))
    out.push({ base, last: base + records.readInt32BE(pos + 23), control: (records.readInt16BE(pos + 21) & ATTR_CONTROL) !== 0, bytes: records.subarray(pos, pos + size) })
    pos += size
  }
  return out
}

/**
 * Acquires records of one share-partition for a member: reads the log from the first
 * acquirable offset, archives the offsets of control batches (never delivered), locks up to
 * `maxRecords` records and returns the batches that hold them with the acquired ranges
 * (runs of consecutive offsets with one delivery count), as Kafka's SharePartition does.
 */
async function acquireFrom(groups: ShareGroups, g: ShareGroup, r: Resolved, memberId: string, maxRecords: number, maxBytes: number, now: number): Promise<{ records: Buffer; acquired: { firstOffset: bigint; lastOffset: bigint; deliveryCount: number }[] }> {
  const log = r.log!
  const sp = groups.partition(g, r.topicId, r.partition)
  if (sp.startOffset < 0) {
    sp.startOffset = shareAutoOffsetReset(groups.broker, g.groupId) === 'earliest' ? log.logStartOffset : log.highWatermark
    groups.changed()
  }
  sp.truncateTo(log.logStartOffset)
  sp.expireLocks(now)
  const from = firstAcquirable(sp)
  if (from >= log.highWatermark) return { records: EMPTY, acquired: [] }
  const read = await log.read(from, Math.max(1, maxBytes), true)
  const batches = splitBatches(read.records)
  const data = new Set<number>()
  const offsets: number[] = []
  for (const b of batches) {
    if (b.control) continue
    for (let o = Math.max(b.base, from); o <= b.last; o++) {
      data.add(o)
      offsets.push(o)
    }
  }
  const end = batches.length > 0 ? batches[batches.length - 1]!.last + 1 : from
  sp.archiveGaps(from, end, data)
  const got = sp.acquire(offsets, memberId, maxRecords, now)
  if (got.length === 0) return { records: EMPTY, acquired: [] }
  groups.changed()
  const acquired: { firstOffset: bigint; lastOffset: bigint; deliveryCount: number }[] = []
  for (const a of got) {
    const prev = acquired[acquired.length - 1]
    if (prev !== undefined && Number(prev.lastOffset) + 1 === a.offset && prev.deliveryCount === a.deliveryCount) prev.lastOffset = BigInt(a.offset)
    else acquired.push({ firstOffset: BigInt(a.offset), lastOffset: BigInt(a.offset), deliveryCount: a.deliveryCount })
  }
  const lo = got[0]!.offset
  const hi = got[got.length - 1]!.offset
  const holding = batches.filter((b) => !b.control && b.last >= lo && b.base <= hi)
  return { records: Buffer.concat(holding.map((b) => b.bytes)), acquired }
}

function partitionData(partitionIndex: number, errorCode: number, nodeId: number): ShareFetchResponsePartitionData {
  return {
    partitionIndex,
    errorCode,
    errorMessage: errorCode === ErrorCodes.NONE ? null : (errorByCode(errorCode)?.message ?? null),
    acknowledgeErrorCode: ErrorCodes.NONE,
    acknowledgeErrorMessage: null,
    currentLeader: { leaderId: errorCode === ErrorCodes.NONE ? nodeId : -1, leaderEpoch: 0 },
    records: EMPTY,
    acquiredRecords: [],
  }
}

/**
 * ShareFetch (KIP-932): checks the session epoch, applies the piggy-backed acknowledgements,
 * then acquires records from the session's partitions, long-polling up to max_wait_ms until
 * some are acquirable (an append, a release or a lock expiry wakes it).
 */
export async function shareFetch(broker: BrokerContext, groups: ShareGroups, req: ShareFetchRequest): Promise<ShareFetchResponse> {
  const lockMs = groups.settings.recordLockDurationMs
  const base = (errorCode: number, message: string | null): ShareFetchResponse => ({ throttleTimeMs: 0, errorCode, errorMessage: message, acquisitionLockTimeoutMs: lockMs, responses: [], nodeEndpoints: [] })
  const groupId = req.groupId ?? ''
  const memberId = req.memberId ?? ''
  if (groupId === '' || memberId === '') return base(ErrorCodes.INVALID_REQUEST, 'GroupId and MemberId must be set')
  let session
  try {
    session = groups.session(groupId, memberId, req.shareSessionEpoch, true)
  } catch (err) {
    if (err instanceof ShareError) return base(err.code, err.message)
    throw err
  }
  const g = groups.group(groupId)
  const now = Date.now()
  const byTopic = new Map<string, ShareFetchResponsePartitionData[]>()
  const out = (topicId: string, p: ShareFetchResponsePartitionData): ShareFetchResponsePartitionData => {
    let list = byTopic.get(topicId)
    if (list === undefined) byTopic.set(topicId, (list = []))
    const existing = list.find((x) => x.partitionIndex === p.partitionIndex)
    if (existing !== undefined) return existing
    list.push(p)
    return p
  }
  for (const ft of req.forgottenTopicsData) for (const p of ft.partitions) session.partitions.delete(`${ft.topicId}:${p}`)
  let acked = false
  for (const t of req.topics) {
    for (const p of t.partitions) {
      const key = `${t.topicId}:${p.partitionIndex}`
      const r = resolvePartition(broker, t.topicId, p.partitionIndex)
      if (r.errorCode !== ErrorCodes.NONE) {
        out(t.topicId, partitionData(p.partitionIndex, r.errorCode, broker.nodeId))
        continue
      }
      if (req.shareSessionEpoch !== -1) session.partitions.add(key)
      if (p.acknowledgementBatches.length > 0) {
        const code = applyAcknowledgements(g.partitions.get(key), p.acknowledgementBatches, memberId, now)
        const pd = out(t.topicId, partitionData(p.partitionIndex, ErrorCodes.NONE, broker.nodeId))
        pd.acknowledgeErrorCode = code
        pd.acknowledgeErrorMessage = code === ErrorCodes.NONE ? null : (errorByCode(code)?.message ?? null)
        acked = true
      }
    }
  }
  if (acked) groups.changed()
  // The closing fetch (epoch -1) only acknowledges; its locks are released as the member leaves.
  if (req.shareSessionEpoch === -1 || req.maxRecords <= 0) return { ...base(ErrorCodes.NONE, null), responses: [...byTopic].map(([topicId, partitions]) => ({ topicId, partitions })) }
  const wanted = [...session.partitions].map((k) => {
    const i = k.lastIndexOf(':')
    return resolvePartition(broker, k.slice(0, i), Number(k.slice(i + 1)))
  })
  const deadline = Date.now() + Math.max(0, req.maxWaitMs)
  for (;;) {
    let budget = req.maxRecords
    let bytes = Math.max(1, Math.min(req.maxBytes, broker.config.fetchMaxBytes))
    let any = false
    for (const r of wanted) {
      if (r.errorCode !== ErrorCodes.NONE || r.log === undefined) {
        out(r.topicId, partitionData(r.partition, r.errorCode, broker.nodeId))
        continue
      }
      if (budget <= 0 || bytes <= 0) break
      try {
        const got = await acquireFrom(groups, g, r, memberId, budget, bytes, Date.now())
        if (got.acquired.length === 0) continue
        const pd = out(r.topicId, partitionData(r.partition, ErrorCodes.NONE, broker.nodeId))
        pd.records = got.records
        pd.acquiredRecords = got.acquired
        for (const a of got.acquired) budget -= Number(a.lastOffset - a.firstOffset) + 1
        bytes -= got.records.length
        any = true
      } catch (err) {
        const code = (err as { code?: unknown }).code
        out(r.topicId, partitionData(r.partition, typeof code === 'number' ? code : ErrorCodes.UNKNOWN_SERVER_ERROR, broker.nodeId))
      }
    }
    const left = deadline - Date.now()
    if (any || byTopic.size > 0 || left <= 0 || wanted.length === 0) break
    const logs = wanted.flatMap((r) => (r.log !== undefined ? [r.log] : []))
    let nextExpiry = left
    for (const sp of g.partitions.values()) {
      const e = sp.nextLockExpiry()
      if (e !== undefined) nextExpiry = Math.min(nextExpiry, Math.max(1, e - Date.now()))
    }
    await Promise.race([broker.appends.wait(logs, nextExpiry), groups.waitForChange(nextExpiry)])
  }
  return { ...base(ErrorCodes.NONE, null), responses: [...byTopic].map(([topicId, partitions]) => ({ topicId, partitions })) }
}
