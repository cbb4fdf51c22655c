import { ErrorCodes, ListGroups } from '@tidelog/protocol'
import { defineHandler } from './types.js'

/** ListGroups 0-5: with the states filter from v4 (KIP-518) and the types filter from v5 (KIP-848; all groups here are "classic"). */
export const listGroupsHandler = defineHandler({
  api: ListGroups,
  minVersion: 0,
  maxVersion: 5,
  handle(ctx, req) {
    const { groups } = ctx.broker
    const v = ctx.version
    const states = new Set((req.statesFilter ?? []).map((s) => s.toLowerCase()))
    const types = new Set((req.typesFilter ?? []).map((s) => s.toLowerCase()))
    const listed = new Map<string, { protocolType: string; state: string }>()
    for (const id of groups.offsets.groupIds()) listed.set(id, { protocolType: 'consumer', state: 'Empty' })
    for (const [id, g] of groups.groups) listed.set(id, { protocolType: g.protocolType ?? '', state: g.state })
    const out = []
    for (const [groupId, g] of listed) {
      if (v >= 4 && states.size > 0 && !states.has(g.state.toLowerCase())) continue
      if (v >= 5 && types.size > 0 && !types.has('classic')) continue
      out.push({ groupId, protocolType: g.protocolType, groupState: g.state, groupType: 'classic' })
    }
    return { throttleTimeMs: 0, errorCode: ErrorCodes.NONE, groups: out }
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, groups: [] }
  },
})
