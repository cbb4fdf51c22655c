import { DescribeGroups, ErrorCodes, type DescribeGroupsResponseDescribedGroup } from '@tidelog/protocol'
import { EMPTY_BYTES } from '../groups/group.js'
import { defineHandler } from './types.js'

// "not requested" sentinel for authorized operations (Integer.MIN_VALUE).
const OPS_NOT_REQUESTED = -2147483648

/**
 * DescribeGroups 0-5: state, protocol and members (with their metadata, and
 * assignments once the group is stable). A group known only by its committed
 * offsets is Empty; an unknown one is Dead, as Kafka answers before v6.
 */
export const describeGroupsHandler = defineHandler({
  api: DescribeGroups,
  minVersion: 0,
  maxVersion: 5,
  handle(ctx, req) {
    const { groups } = ctx.broker
    const withOps = ctx.version >= 3 ? { authorizedOperations: OPS_NOT_REQUESTED } : {}
    const described = req.groups.map((groupId): DescribeGroupsResponseDescribedGroup => {
      if (groupId === '') {
        return { errorCode: ErrorCodes.INVALID_GROUP_ID, groupId, groupState: '', protocolType: '', protocolData: '', members: [], ...withOps }
      }
      const g = groups.groups.get(groupId)
      if (g === undefined) {
        const hasOffsets = groups.offsets.groupIds().includes(groupId)
        return { errorCode: ErrorCodes.NONE, groupId, groupState: hasOffsets ? 'Empty' : 'Dead', protocolType: hasOffsets ? 'consumer' : '', protocolData: '', members: [], ...withOps }
      }
      return {
        errorCode: ErrorCodes.NONE,
        groupId,
        groupState: g.state,
        protocolType: g.protocolType ?? '',
        protocolData: g.state === 'Stable' ? (g.protocolName ?? '') : '',
        members: [...g.members.values()].map((m) => ({
          memberId: m.memberId,
          groupInstanceId: m.groupInstanceId,
          clientId: m.clientId,
          clientHost: m.clientHost,
          memberMetadata: g.state === 'Stable' ? (m.protocols.find((p) => p.name === g.protocolName)?.metadata ?? EMPTY_BYTES) : EMPTY_BYTES,
          memberAssignment: g.state === 'Stable' ? m.assignment : EMPTY_BYTES,
        })),
        ...withOps,
      }
    })
    return { throttleTimeMs: 0, groups: described }
  },
  errorResponse(req, errorCode) {
    return { throttleTimeMs: 0, groups: req.groups.map((groupId) => ({ errorCode, groupId, groupState: '', protocolType: '', protocolData: '', members: [] })) }
  },
})
