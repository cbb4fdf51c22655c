import { SyncGroup } from '@tidelog/protocol'
import { defineHandler } from './types.js'

const EMPTY = new Uint8Array(0)

/** SyncGroup 0-5: the leader's assignments go out to every member of the generation. */
export const syncGroupHandler = defineHandler({
  api: SyncGroup,
  minVersion: 0,
  maxVersion: 5,
  async handle(ctx, req) {
    const r = await ctx.broker.groups.sync(
      { groupId: req.groupId, memberId: req.memberId, groupInstanceId: req.groupInstanceId ?? null, generationId: req.generationId },
      req.protocolType ?? null,
      req.protocolName ?? null,
      req.assignments.map((a) => ({ memberId: a.memberId, assignment: Buffer.from(a.assignment) })),
    )
    return { throttleTimeMs: 0, errorCode: r.errorCode, protocolType: r.protocolType, protocolName: r.protocolName, assignment: r.assignment }
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, protocolType: null, protocolName: null, assignment: EMPTY }
  },
})
