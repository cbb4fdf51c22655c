import { ErrorCodes, ShareGroupHeartbeat } from '@tidelog/protocol'
import { ShareError, shareGroupsOf } from '../groups/share/share-groups.js'
import { defineHandler } from './types.js'

/**
 * ShareGroupHeartbeat v1 (KIP-932): joins (epoch 0, with the subscription), heartbeats and
 * leaves (epoch -1) a share group. The member id is the client's own (KIP-1082); the
 * assignment is sent whenever the member's epoch moves, as share groups have no revocation
 * phase: a partition may be consumed by several members at once.
 */
export const shareGroupHeartbeatHandler = defineHandler({
  api: ShareGroupHeartbeat,
  minVersion: 1,
  maxVersion: 1,
  handle(ctx, req) {
    const groups = shareGroupsOf(ctx.broker)
    const interval = groups.settings.heartbeatIntervalMs
    try {
      const r = groups.heartbeat(req, { clientId: ctx.header.clientId ?? '', host: `/${ctx.peer.replace(/:\d+$/, '')}` }, Date.now())
      if (r.left === true) return { throttleTimeMs: 0, errorCode: ErrorCodes.NONE, errorMessage: null, memberId: req.memberId, memberEpoch: -1, heartbeatIntervalMs: interval, assignment: null }
      const m = r.member!
      const assignment = r.sendAssignment ? { topicPartitions: [...m.assignment].map(([topicId, partitions]) => ({ topicId, partitions: [...partitions].sort((a, b) => a - b) })) } : null
      return { throttleTimeMs: 0, errorCode: ErrorCodes.NONE, errorMessage: null, memberId: m.memberId, memberEpoch: m.memberEpoch, heartbeatIntervalMs: interval, assignment }
    } catch (err) {
      if (!(err instanceof ShareError)) throw err
      return { throttleTimeMs: 0, errorCode: err.code, errorMessage: err.message, memberId: null, memberEpoch: 0, heartbeatIntervalMs: 0, assignment: null }
    }
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, errorMessage: null, memberId: null, memberEpoch: 0, heartbeatIntervalMs: 0, assignment: null }
  },
})
