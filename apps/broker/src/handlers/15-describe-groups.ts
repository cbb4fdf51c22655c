import { DescribeGroups, ErrorCodes, type DescribeGroupsResponseDescribedGroup } from '@tidelog/protocol'
import { defineHandler } from './types.js'

// Integer.MIN_VALUE: authorized operations were not asked for.
const OPS_NOT_REQUESTED = -2147483648
// With no authorizer Kafka reports every operation a group supports: READ (3), DELETE (6),
// DESCRIBE (8), DESCRIBE_CONFIGS (10), ALTER_CONFIGS (11), one bit each.
const GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11)

/**
 * DescribeGroups 0-5: state, protocol type and protocol, and the members
 * (their metadata and assignment once the group is Stable). A group this
 * broker does not know is Dead with no error, as Kafka answers before v6.
 */
export const describeGroupsHandler = defineHandler({
  api: DescribeGroups,
  minVersion: 0,
  maxVersion: 5,
  handle(ctx, req) {
    const { groups } = ctx.broker
    const ops = ctx.version < 3 ? undefined : req.includeAuthorizedOperations === true ? GROUP_OPERATIONS : OPS_NOT_REQUESTED
    const described = req.groups.map((groupId): DescribeGroupsResponseDescribedGroup => {
      const s = groups.describeGroup(groupId)
      return {
        errorCode: ErrorCodes.NONE,
        groupId,
        groupState: s.state,
        protocolType: s.protocolType,
        protocolData: s.protocol,
        members: s.members.map((m) => ({
          memberId: m.memberId,
          groupInstanceId: m.groupInstanceId,
          clientId: m.clientId,
          clientHost: m.clientHost,
          memberMetadata: m.metadata,
          memberAssignment: m.assignment,
        })),
        ...(ops !== undefined ? { authorizedOperations: ops } : {}),
      }
    })
    return { throttleTimeMs: 0, groups: described }
  },
  errorResponse(req, errorCode) {
    return { throttleTimeMs: 0, groups: req.groups.map((groupId) => ({ errorCode, groupId, groupState: '', protocolType: '', protocolData: '', members: [] })) }
  },
})
