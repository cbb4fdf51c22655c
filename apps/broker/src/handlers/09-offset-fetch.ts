import {
  ErrorCodes,
  OffsetFetch,
  type OffsetFetchResponse,
  type OffsetFetchResponsePartitions,
  type OffsetFetchResponseTopics,
} from '@tidelog/protocol'
import type { GroupCoordinator } from '../groups/coordinator.js'
import { defineHandler } from './types.js'

function fetchGroup(groups: GroupCoordinator, groupId: string, topics: readonly { name: string; partitionIndexes: number[] }[] | null): OffsetFetchResponseTopics[] {
  const asked = topics === null ? null : topics.map((t) => ({ name: t.name, partitions: t.partitionIndexes }))
  return groups.fetchOffsets(groupId, asked).map((t) => ({
    name: t.name,
    partitions: t.partitions.map(
      (p): OffsetFetchResponsePartitions => ({
        partitionIndex: p.partition,
        committedOffset: p.offset,
        committedLeaderEpoch: p.leaderEpoch,
        metadata: p.metadata,
        errorCode: p.errorCode,
      }),
    ),
  }))
}

/**
 * OffsetFetch 1-9: one group before v8, several from v8 (KIP-709); a null
 * topic list (v2+) asks for every offset the group committed; partitions
 * never committed read -1. Offsets are answered whatever the group's state,
 * as Kafka does for groups that only store offsets. There are no
 * transactional commits here, so require_stable (v7+) has nothing to wait for.
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
        groups: (req.groups ?? []).map((g) => ({ groupId: g.groupId, topics: fetchGroup(groups, g.groupId, g.topics), errorCode: ErrorCodes.NONE })),
      }
    }
    return { throttleTimeMs: 0, topics: fetchGroup(groups, req.groupId ?? '', req.topics ?? null), errorCode: ErrorCodes.NONE }
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
