import { ErrorCodes, SyncGroup, type SyncGroupResponse } from '@tidelog/protocol'
import { type SyncResult, syncError } from '../groups/group.js'
import { defineHandler } from './types.js'

const toResponse = (r: SyncResult): SyncGroupResponse => ({
  throttleTimeMs: 0,
  errorCode: r.errorCode,
  protocolType: r.protocolType,
  protocolName: r.protocolName,
  assignment: r.assignment,
})

/**
 * SyncGroup 0-5: followers wait for the leader's assignments, which go out to
 * every member of the generation at once. From v5 the protocol type and name
 * are mandatory and must be the group's (KIP-559).
 */
export const syncGroupHandler = defineHandler({
  api: SyncGroup,
  minVersion: 0,
  maxVersion: 5,
  async handle(ctx, req) {
    if (ctx.version >= 5 && (req.protocolType == null || req.protocolName == null)) {
      return toResponse(syncError(ErrorCodes.INCONSISTENT_GROUP_PROTOCOL))
    }
    const r = await ctx.broker.groups.sync({
      groupId: req.groupId,
      generationId: req.generationId,
      memberId: req.memberId,
      groupInstanceId: req.groupInstanceId ?? null,
      protocolType: req.protocolType ?? null,
      protocolName: req.protocolName ?? null,
      // Copies: the assignments outlive the request frame.
      assignments: req.assignments.map((a) => ({ memberId: a.memberId, assignment: Buffer.from(a.assignment) })),
    })
    return toResponse(r)
  },
  errorResponse(_req, errorCode) {
    return toResponse(syncError(errorCode))
  },
})
