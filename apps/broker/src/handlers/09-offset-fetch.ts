import {
  ErrorCodes,
  OffsetFetch,
  type OffsetFetchResponse,
  type OffsetFetchResponsePartitions,
  type OffsetFetchResponseTopics,
} from '@tidelog/protocol'
import type { GroupCoordinator } from '../groups/coordinator.js'
import { defineHandler } from './types.js'

function fetchGroup(
  groups: GroupCoordinator,
  groupId: string,
  topics: readonly { name: string; partitionIndexes: number[] }[] | null,
  requireStable: boolean,
): OffsetFetchResponseTopics[] {
  const asked = topics === null ? null : topics.map((t) => ({ name: t.name, partitions: t.partitionIndexes }))
  return groups.fetchOffsets(groupId, asked).map((t) => ({
    name: t.name,
    partitions: t.partitions.map((p): OffsetFetchResponsePartitions => {
      // KIP-447: a consumer asking for stable offsets must wait while an open transaction holds one for the partition.
      if (requireStable && groups.offsets.hasPending(groupId, t.name, p.partition)) {
        return { partitionIndex: p.partition, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: ErrorCodes.UNSTABLE_OFFSET_COMMIT }
      }
      return { partitionIndex: p.partition, committedOffset: p.offset, committedLeaderEpoch: p.leaderEpoch, metadata: p.metadata, errorCode: p.errorCode }
    }),
  }))
}

/**
 * OffsetFetch 1-9: one group before v8, several from v8 (KIP-709); a null
 * topic list (v2+) asks for every offset the group committed; partitions
 * never committed read -1. Offsets are answered whatever the group's state,
 * as Kafka does for groups that only store offsets. Offsets of open
 * transactions are not visible; with require_stable (v7+, KIP-447) a
 * partition holding one answers UNSTABLE_OFFSET_COMMIT, which the consumer retries.
 */
export const offsetFetchHandler = defineHandler({
  api: OffsetFetch,
  minVersion: 1,
  maxVersion: 9,
  handle(ctx, req): OffsetFetchResponse {
    const groups = ctx.broker.groups
    if (ctx.version >= 8) {
      return {
        throttleTimeMs: 0,
        groups: (req.groups ?? []).map((g) => ({ groupId: g.groupId, topics: fetchGroup(groups, g.groupId, g.topics, req.requireStable ?? false), errorCode: ErrorCodes.NONE })),
      }
    }
    return { throttleTimeMs: 0, topics: fetchGroup(groups, req.groupId ?? '', req.topics ?? null, ctx.version >= 7 && (req.requireStable ?? false)), errorCode: ErrorCodes.NONE }
  },
  errorResponse(req, errorCode, version) {
    if (version >= 8) return { groups: (req.groups ?? []).map((g) => ({ groupId: g.groupId, topics: [], errorCode })) }
    // v1 has no group-level error: it goes on every partition asked for.
    const topics = (req.topics ?? []).map((t) => ({
      name: t.name,
      partitions: t.partitionIndexes.map((partitionIndex) => ({ partitionIndex, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode })),
    }))
    return { topics, errorCode }
  },
})
