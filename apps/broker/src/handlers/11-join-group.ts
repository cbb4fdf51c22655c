import { JoinGroup, type JoinGroupResponse } from '@tidelog/protocol'
import { type JoinResult, joinError } from '../groups/group.js'
import { defineHandler } from './types.js'

function toResponse(r: JoinResult, version: number): JoinGroupResponse {
  return {
    throttleTimeMs: 0,
    errorCode: r.errorCode,
    generationId: r.generationId,
    protocolType: r.protocolType,
    // The protocol name is nullable from v7 on, where Kafka sends null rather than "";
    // before v7 "no protocol" is the empty string.
    protocolName: version >= 7 ? (r.protocolName === '' ? null : r.protocolName) : (r.protocolName ?? ''),
    leader: r.leader,
    ...(version >= 9 ? { skipAssignment: r.skipAssignment } : {}),
    memberId: r.memberId,
    members: r.members.map((m) => ({ memberId: m.memberId, groupInstanceId: m.groupInstanceId, metadata: m.metadata })),
  }
}

/** Kafka's client host: the peer's address with a leading slash (Java's InetAddress.toString). */
export function clientHost(peer: string): string {
  const colon = peer.lastIndexOf(':')
  return `/${colon < 0 ? peer : peer.slice(0, colon)}`
}

/**
 * JoinGroup 0-9: answered when the rebalance completes. MEMBER_ID_REQUIRED on
 * a new dynamic member's first join from v4 (KIP-394), static members from v5
 * (KIP-345), the join reason from v8 (KIP-800), skip_assignment from v9 (KIP-814).
 */
export const joinGroupHandler = defineHandler({
  api: JoinGroup,
  minVersion: 0,
  maxVersion: 9,
  async handle(ctx, req) {
    const v = ctx.version
    const groupInstanceId = req.groupInstanceId ?? null
    const r = await ctx.broker.groups.join({
      groupId: req.groupId,
      memberId: req.memberId,
      groupInstanceId,
      clientId: ctx.header.clientId ?? '',
      clientHost: clientHost(ctx.peer),
      sessionTimeoutMs: req.sessionTimeoutMs,
      // v0 has no rebalance timeout: the session timeout bounds the rebalance.
      rebalanceTimeoutMs: v >= 1 ? (req.rebalanceTimeoutMs ?? req.sessionTimeoutMs) : req.sessionTimeoutMs,
      protocolType: req.protocolType,
      // Copies: members keep their metadata for the group's life, not the request frame.
      protocols: req.protocols.map((p) => ({ name: p.name, metadata: Buffer.from(p.metadata) })),
      requireKnownMemberId: v >= 4 && groupInstanceId === null,
      supportSkippingAssignment: v >= 9,
      reason: req.reason ?? null,
    })
    return toResponse(r, v)
  },
  errorResponse(req, errorCode, version) {
    return toResponse(joinError(req.memberId, errorCode), version)
  },
})
