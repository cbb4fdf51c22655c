import { JoinGroup, type JoinGroupResponse } from '@tidelog/protocol'
import type { JoinResult } from '../groups/group.js'
import { defineHandler } from './types.js'

function toResponse(r: JoinResult, version: number): JoinGroupResponse {
  return {
    throttleTimeMs: 0,
    errorCode: r.errorCode,
    generationId: r.generationId,
    protocolType: r.protocolType,
    // Nullable only from v7; before that an absent protocol is the empty string.
    protocolName: r.protocolName ?? (version >= 7 ? null : ''),
    leader: r.leader,
    ...(version >= 9 ? { skipAssignment: false } : {}),
    memberId: r.memberId,
    members: r.members.map((m) => ({ memberId: m.memberId, groupInstanceId: m.groupInstanceId, metadata: m.metadata })),
  }
}

/** JoinGroup 0-9: MEMBER_ID_REQUIRED on a first join from v4 (KIP-394), static members from v5 (KIP-345). */
export const joinGroupHandler = defineHandler({
  api: JoinGroup,
  minVersion: 0,
  maxVersion: 9,
  async handle(ctx, req) {
    const r = await ctx.broker.groups.join({
      groupId: req.groupId,
      memberId: req.memberId,
      groupInstanceId: req.groupInstanceId ?? null,
      clientId: ctx.header.clientId ?? '',
      clientHost: `/${ctx.peer.slice(0, ctx.peer.lastIndexOf(':'))}`,
      sessionTimeoutMs: req.sessionTimeoutMs,
      // v0 has no rebalance timeout: it is the session timeout.
      rebalanceTimeoutMs: ctx.version >= 1 && (req.rebalanceTimeoutMs ?? -1) >= 0 ? req.rebalanceTimeoutMs! : req.sessionTimeoutMs,
      protocolType: req.protocolType,
      protocols: req.protocols.map((p) => ({ name: p.name, metadata: Buffer.from(p.metadata) })),
      requireKnownMemberId: ctx.version >= 4,
    })
    return toResponse(r, ctx.version)
  },
  errorResponse(req, errorCode, version) {
    return toResponse({ errorCode, generationId: -1, protocolType: null, protocolName: null, leader: '', memberId: req.memberId, members: [] }, version)
  },
})
