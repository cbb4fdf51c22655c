import { ErrorCodes, ShareGroupDescribe } from '@tidelog/protocol'
import { shareGroupsOf } from '../groups/share/share-groups.js'
import { defineHandler } from './types.js'

// Kafka's authorized-operations sentinel when they were not asked for.
const NOT_REQUESTED = -2147483648

/** ShareGroupDescribe v1: members, their subscriptions and assignments; an unknown id is GROUP_ID_NOT_FOUND. */
export const shareGroupDescribeHandler = defineHandler({
  api: ShareGroupDescribe,
  minVersion: 1,
  maxVersion: 1,
  handle(ctx, req) {
    const groups = shareGroupsOf(ctx.broker)
    const now = Date.now()
    return {
      throttleTimeMs: 0,
      groups: req.groupIds.map((groupId) => {
        const g = groups.groups.get(groupId)
        if (g === undefined) {
          return { errorCode: ErrorCodes.GROUP_ID_NOT_FOUND, errorMessage: `Group ${groupId} not found.`, groupId, groupState: 'Dead', groupEpoch: -1, assignmentEpoch: -1, assignorName: '', members: [], authorizedOperations: NOT_REQUESTED }
        }
        groups.expireMembers(g, now)
        return {
          errorCode: ErrorCodes.NONE,
          errorMessage: null,
          groupId,
          groupState: groups.state(g),
          groupEpoch: g.groupEpoch,
          assignmentEpoch: g.assignmentEpoch,
          assignorName: 'simple',
          members: [...g.members.values()].map((m) => ({
            memberId: m.memberId,
            rackId: m.rackId,
            memberEpoch: m.memberEpoch,
            clientId: m.clientId,
            clientHost: m.clientHost,
            subscribedTopicNames: m.subscribedTopicNames,
            assignment: {
              topicPartitions: [...m.assignment].map(([topicId, partitions]) => ({ topicId, topicName: ctx.broker.topics.getById(topicId)?.name ?? '', partitions })),
            },
          })),
          authorizedOperations: NOT_REQUESTED,
        }
      }),
    }
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      groups: req.groupIds.map((groupId) => ({ errorCode, errorMessage: null, groupId, groupState: '', groupEpoch: -1, assignmentEpoch: -1, assignorName: '', members: [], authorizedOperations: NOT_REQUESTED })),
    }
  },
})
