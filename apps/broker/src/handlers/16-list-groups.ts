import { ErrorCodes, ListGroups } from '@tidelog/protocol'
import { listShareGroups } from '../groups/share/share-groups.js'
import { defineHandler } from './types.js'

/**
 * ListGroups 0-5: every group, with its state from v4 (KIP-518, which adds
 * the states filter) and its type from v5 (KIP-848, with the types filter;
 * all groups here are "classic"). Filters match case-insensitively, as Kafka's.
 */
export const listGroupsHandler = defineHandler({
  api: ListGroups,
  minVersion: 0,
  maxVersion: 5,
  handle(ctx, req) {
    const v = ctx.version
    const listed = ctx.broker.groups.listGroups(v >= 4 ? (req.statesFilter ?? []) : [], v >= 5 ? (req.typesFilter ?? []) : [])
    return {
      throttleTimeMs: 0,
      errorCode: ErrorCodes.NONE,
      groups: [
        ...listed.map((g) => ({ groupId: g.groupId, protocolType: g.protocolType, groupState: g.state, groupType: g.groupType })),
        ...listShareGroups(ctx.broker, v >= 4 ? (req.statesFilter ?? []) : [], v >= 5 ? (req.typesFilter ?? []) : []),
      ],
    }
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, groups: [] }
  },
})
