import { DeleteGroups, ErrorCodes } from '@tidelog/protocol'
import { defineHandler } from './types.js'

/** DeleteGroups 0-2: only groups without members, with their committed offsets. */
export const deleteGroupsHandler = defineHandler({
  api: DeleteGroups,
  minVersion: 0,
  maxVersion: 2,
  handle(ctx, req) {
    const { groups } = ctx.broker
    return {
      throttleTimeMs: 0,
      results: req.groupsNames.map((groupId) => ({ groupId, errorCode: groupId === '' ? ErrorCodes.INVALID_GROUP_ID : groups.deleteGroup(groupId) })),
    }
  },
  errorResponse(req, errorCode) {
    return { throttleTimeMs: 0, results: req.groupsNames.map((groupId) => ({ groupId, errorCode })) }
  },
})
