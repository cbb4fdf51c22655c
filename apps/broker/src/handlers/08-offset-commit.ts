import { ErrorCodes, OffsetCommit, type OffsetCommitRequest, type OffsetCommitResponse } from '@tidelog/protocol'
import type { OffsetCommit as Commit } from '../groups/offsets-store.js'
import { defineHandler } from './types.js'

// Kafka's offset.metadata.max.bytes default.
const MAX_METADATA = 4096

function allWith(req: OffsetCommitRequest, errorCode: number): OffsetCommitResponse {
  return {
    throttleTimeMs: 0,
    topics: req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode })) })),
  }
}

/**
 * OffsetCommit 2-9: fenced by generation and member (or, with generation -1 and
 * no member, a commit from outside the group, allowed while it has no members);
 * the offsets of one request are stored with one journal write.
 */
export const offsetCommitHandler = defineHandler({
  api: OffsetCommit,
  minVersion: 2,
  maxVersion: 9,
  handle(ctx, req): OffsetCommitResponse {
    const { groups, topics } = ctx.broker
    if (req.groupId === '') return allWith(req, ErrorCodes.INVALID_GROUP_ID)
    const check = groups.validateCommit({
      groupId: req.groupId,
      memberId: req.memberId ?? '',
      groupInstanceId: req.groupInstanceId ?? null,
      generationId: req.generationIdOrMemberEpoch ?? -1,
    })
    if (check !== ErrorCodes.NONE) return allWith(req, check)
    const now = Date.now()
    const commits: Commit[] = []
    const response: OffsetCommitResponse = {
      throttleTimeMs: 0,
      topics: req.topics.map((t) => {
        const topic = topics.get(t.name)
        return {
          name: t.name,
          partitions: t.partitions.map((p) => {
            let errorCode: number = ErrorCodes.NONE
            if (topic === undefined || p.partitionIndex < 0 || p.partitionIndex >= topic.logs.length) errorCode = ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION
            else if (p.committedMetadata !== null && Buffer.byteLength(p.committedMetadata) > MAX_METADATA) errorCode = ErrorCodes.OFFSET_METADATA_TOO_LARGE
            else {
              commits.push({
                topic: t.name,
                partition: p.partitionIndex,
                offset: Number(p.committedOffset),
                leaderEpoch: p.committedLeaderEpoch ?? -1,
                metadata: p.committedMetadata,
                commitTimestamp: now,
              })
            }
            return { partitionIndex: p.partitionIndex, errorCode }
          }),
        }
      }),
    }
    groups.offsets.commit(req.groupId, commits)
    return response
  },
  errorResponse: allWith,
})
