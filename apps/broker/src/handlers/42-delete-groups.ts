import { DeleteGroups } from '@tidelog/protocol'
import { defineHandler } from './types.js'

/**
 * DeleteGroups 0-2: a group goes, with its committed offsets, only while it
 * has no members (NON_EMPTY_GROUP otherwise; GROUP_ID_NOT_FOUND for one this
 * broker does not know). A name given twice is answered once, as Kafka does.
 */
export const deleteGroupsHandler = defineHandler({
  api: DeleteGroups,
  minVersion: 0,
  maxVersion: 2,
  handle(ctx, req) {
    const ids = [...new Set(req.groupsNames)]
    const codes = ctx.broker.groups.deleteGroups(ids)
    return { throttleTimeMs: 0, results: ids.map((groupId, i) => ({ groupId, errorCode: codes[i]! })) }
  },
  errorResponse(req, errorCode) {
    return { throttleTimeMs: 0, results: [...new Set(req.groupsNames)].map((groupId) => ({ groupId, errorCode })) }
  },
})
