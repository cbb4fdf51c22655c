import { ErrorCodes, OffsetFetch, type OffsetFetchResponse } from '@tidelog/protocol'
import type { OffsetsStore } from '../groups/offsets-store.js'
import { defineHandler } from './types.js'

interface PartitionAnswer {
  partitionIndex: number
  committedOffset: bigint
  committedLeaderEpoch: number
  metadata: string | null
  errorCode: number
}

/** The committed offsets of `groupId` for the asked partitions, or all of them for a null list. */
function answer(store: OffsetsStore, groupId: string, topics: { name: string; partitionIndexes: number[] }[] | null) {
  const out: { name: string; partitions: PartitionAnswer[] }[] = []
  const one = (t: string, p: number): PartitionAnswer => {
    const c = store.get(groupId, t, p)
    return c === undefined
      ? { partitionIndex: p, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: ErrorCodes.NONE }
      : { partitionIndex: p, committedOffset: BigInt(c.offset), committedLeaderEpoch: c.leaderEpoch, metadata: c.metadata, errorCode: ErrorCodes.NONE }
  }
  if (topics === null) {
    for (const [t, parts] of store.groupOffsets(groupId)) out.push({ name: t, partitions: [...parts.keys()].sort((a, b) => a - b).map((p) => one(t, p)) })
  } else {
    for (const t of topics) out.push({ name: t.name, partitions: t.partitionIndexes.map((p) => one(t.name, p)) })
  }
  return out
}

/** OffsetFetch 1-9: one group before v8, many from v8 (KIP-709). */
export const offsetFetchHandler = defineHandler({
  api: OffsetFetch,
  minVersion: 1,
  maxVersion: 9,
  handle(ctx, req): OffsetFetchResponse {
    const store = ctx.broker.groups.offsets
    const v = ctx.version
    if (v >= 8) {
      return {
        throttleTimeMs: 0,
        groups: (req.groups ?? []).map((g) => ({
          groupId: g.groupId,
          topics: answer(store, g.groupId, g.topics),
          errorCode: g.groupId === '' ? ErrorCodes.INVALID_GROUP_ID : ErrorCodes.NONE,
        })),
      }
    }
    const topics = answer(store, req.groupId ?? '', req.topics ?? null).map((t) => ({
      name: t.name,
      // committedLeaderEpoch exists from v5.
      partitions: t.partitions.map((p) => (v >= 5 ? p : { ...p, committedLeaderEpoch: undefined })),
    }))
    return { throttleTimeMs: 0, topics, errorCode: req.groupId === '' ? ErrorCodes.INVALID_GROUP_ID : ErrorCodes.NONE }
  },
  errorResponse(req, errorCode, version) {
    if (version >= 8) return { groups: (req.groups ?? []).map((g) => ({ groupId: g.groupId, topics: [], errorCode })) }
    return { topics: [], errorCode }
  },
})
