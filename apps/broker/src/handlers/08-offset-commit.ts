import { ErrorCodes, OffsetCommit, type OffsetCommitRequest, type OffsetCommitResponse } from '@tidelog/protocol'
import type { OffsetToCommit } from '../groups/coordinator.js'
import { defineHandler } from './types.js'

function respond(req: OffsetCommitRequest, codes: readonly (readonly number[])[]): OffsetCommitResponse {
  return {
    throttleTimeMs: 0,
    topics: req.topics.map((t, ti) => ({
      name: t.name,
      partitions: t.partitions.map((p, pi) => ({ partitionIndex: p.partitionIndex, errorCode: codes[ti]![pi]! })),
    })),
  }
}

/**
 * OffsetCommit 2-9. Partitions this broker does not host are answered
 * UNKNOWN_TOPIC_OR_PARTITION here, as KafkaApis does before the coordinator
 * sees the request; the others are checked against the group's generation and
 * member and stored with one append.
 */
export const offsetCommitHandler = defineHandler({
  api: OffsetCommit,
  minVersion: 2,
  maxVersion: 9,
  async handle(ctx, req): Promise<OffsetCommitResponse> {
    const { groups, topics } = ctx.broker
    const codes = req.topics.map((t) => t.partitions.map((): number => ErrorCodes.NONE))
    const offsets: OffsetToCommit[] = []
    const slots: [number, number][] = []
    req.topics.forEach((t, ti) => {
      const topic = topics.get(t.name)
      t.partitions.forEach((p, pi) => {
        if (topic === undefined || p.partitionIndex < 0 || p.partitionIndex >= topic.logs.length) {
          codes[ti]![pi] = ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION
          return
        }
        offsets.push({
          topic: t.name,
          partition: p.partitionIndex,
          offset: p.committedOffset,
          leaderEpoch: p.committedLeaderEpoch ?? -1,
          metadata: p.committedMetadata,
        })
        slots.push([ti, pi])
      })
    })
    if (offsets.length > 0) {
      const results = await groups.commitOffsets({
        groupId: req.groupId,
        generationId: req.generationIdOrMemberEpoch ?? -1,
        memberId: req.memberId ?? '',
        groupInstanceId: req.groupInstanceId ?? null,
        retentionTimeMs: req.retentionTimeMs ?? -1n,
        offsets,
      })
      results.forEach((code, i) => {
        const [ti, pi] = slots[i]!
        codes[ti]![pi] = code
      })
    }
    return respond(req, codes)
  },
  errorResponse(req, errorCode) {
    return respond(
      req,
      req.topics.map((t) => t.partitions.map(() => errorCode)),
    )
  },
})
