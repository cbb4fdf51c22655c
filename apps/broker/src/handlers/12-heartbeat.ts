import { Heartbeat } from '@tidelog/protocol'
import { defineHandler } from './types.js'

/**
 * Heartbeat 0-4: keeps the member's session alive; REBALANCE_IN_PROGRESS is
 * how a member learns it must rejoin.
 */
export const heartbeatHandler = defineHandler({
  api: Heartbeat,
  minVersion: 0,
  maxVersion: 4,
  handle(ctx, req) {
    const errorCode = ctx.broker.groups.heartbeat({
      groupId: req.groupId,
      memberId: req.memberId,
      groupInstanceId: req.groupInstanceId ?? null,
      generationId: req.generationId,
    })
    return { throttleTimeMs: 0, errorCode }
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode }
  },
})
