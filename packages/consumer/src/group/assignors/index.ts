import { cooperativeStickyAssignor } from './cooperative-sticky.js'
import { rangeAssignor } from './range.js'
import { roundRobinAssignor } from './round-robin.js'
import type { Assignor, RebalanceProtocol } from './types.js'

export { rangeAssignor } from './range.js'
export { roundRobinAssignor } from './round-robin.js'
export { cooperativeStickyAssignor, stickyAssign, withholdTransfers, generationFromUserData } from './cooperative-sticky.js'
export { compareMembers } from './types.js'
export type { Assignor, AssignmentInput, GroupMember, RebalanceProtocol } from './types.js'

const BUILT_IN: Record<string, Assignor> = {
  range: rangeAssignor,
  roundrobin: roundRobinAssignor,
  'cooperative-sticky': cooperativeStickyAssignor,
}

export function resolveAssignors(list: readonly (Assignor | string)[] | undefined): Assignor[] {
  const out = (list ?? ['range', 'cooperative-sticky']).map((a) => {
    if (typeof a !== 'string') {
      if (typeof a?.name !== 'string' || a.name === '' || typeof a.assign !== 'function') throw new TypeError('an assignor needs a name and an assign function')
      return a
    }
    const found = BUILT_IN[a]
    if (found === undefined) throw new TypeError(`unknown assignor ${JSON.stringify(a)}; built in: ${Object.keys(BUILT_IN).join(', ')}`)
    return found
  })
  if (out.length === 0) throw new TypeError('at least one assignor is needed')
  const names = new Set(out.map((a) => a.name))
  if (names.size !== out.length) throw new TypeError('assignor names must be unique')
  return out
}

/**
 * Java's rule: rebalance cooperatively only if every configured assignor supports it, so a
 * member listing an eager assignor keeps rebalancing eagerly whichever assignor is chosen.
 */
export function rebalanceProtocolOf(assignors: readonly Assignor[]): RebalanceProtocol {
  return assignors.every((a) => (a.protocols ?? ['eager']).includes('cooperative')) ? 'cooperative' : 'eager'
}
