import { ErrorCodes, LeaveGroup, type LeaveGroupResponse } from '@tidelog/protocol'
import { defineHandler } from './types.js'

/** LeaveGroup 0-5: one member before v3, a batch of member identities from v3 (KIP-345). */
export const leaveGroupHandler = defineHandler({
  api: LeaveGroup,
  minVersion: 0,
  maxVersion: 5,
  handle(ctx, req): LeaveGroupResponse {
    const groups = ctx.broker.groups
    if (ctx.version < 3) {
      const [code] = groups.leave(req.groupId, [{ memberId: req.memberId ?? '', groupInstanceId: null }])
      return { throttleTimeMs: 0, errorCode: code! }
    }
    const ids = (req.members ?? []).map((m) => ({ memberId: m.memberId, groupInstanceId: m.groupInstanceId }))
    const codes = groups.leave(req.groupId, ids)
    return {
      throttleTimeMs: 0,
      errorCode: ErrorCodes.NONE,
      members: ids.map((m, i) => ({ memberId: m.memberId, groupInstanceId: m.groupInstanceId, errorCode: codes[i]! })),
    }
  },
  errorResponse(_req, errorCode, version) {
    return version >= 3 ? { throttleTimeMs: 0, errorCode, members: [] } : { throttleTimeMs: 0, errorCode }
  },
})
