import { ErrorCodes, LeaveGroup, type LeaveGroupResponse } from '@tidelog/protocol'
import { defineHandler } from './types.js'

/**
 * LeaveGroup 0-5: one member before v3; from v3 a batch of members, where a
 * static member may be named by its instance id alone (KIP-345), with a
 * reason from v5 (KIP-800). Before v3 the only error is the request's: the
 * group's, or else the member's.
 */
export const leaveGroupHandler = defineHandler({
  api: LeaveGroup,
  minVersion: 0,
  maxVersion: 5,
  handle(ctx, req): LeaveGroupResponse {
    const groups = ctx.broker.groups
    if (ctx.version < 3) {
      const r = groups.leave(req.groupId, [{ memberId: req.memberId ?? '', groupInstanceId: null }])
      return { throttleTimeMs: 0, errorCode: r.errorCode !== ErrorCodes.NONE ? r.errorCode : (r.members[0]?.errorCode ?? ErrorCodes.NONE) }
    }
    const r = groups.leave(
      req.groupId,
      (req.members ?? []).map((m) => ({ memberId: m.memberId, groupInstanceId: m.groupInstanceId, reason: m.reason ?? null })),
    )
    return { throttleTimeMs: 0, errorCode: r.errorCode, members: r.members }
  },
  errorResponse(_req, errorCode, version) {
    return version >= 3 ? { throttleTimeMs: 0, errorCode, members: [] } : { throttleTimeMs: 0, errorCode }
  },
})
