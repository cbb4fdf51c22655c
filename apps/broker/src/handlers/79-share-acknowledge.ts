import { ErrorCodes, ShareAcknowledge, errorByCode } from '@tidelog/protocol'
import { applyAcknowledgements, resolvePartition } from '../groups/share/share-fetch.js'
import { ShareError, shareGroupsOf } from '../groups/share/share-groups.js'
import { defineHandler } from './types.js'

/**
 * ShareAcknowledge v1 (KIP-932): ACCEPT, RELEASE or REJECT records the member acquired,
 * within its share session (epoch 0 is refused: only ShareFetch opens a session; -1 closes
 * it after acknowledging).
 */
export const shareAcknowledgeHandler = defineHandler({
  api: ShareAcknowledge,
  minVersion: 1,
  maxVersion: 1,
  handle(ctx, req) {
    const groups = shareGroupsOf(ctx.broker)
    const groupId = req.groupId ?? ''
    const memberId = req.memberId ?? ''
    const fail = (errorCode: number, errorMessage: string) => ({ throttleTimeMs: 0, errorCode, errorMessage, acquisitionLockTimeoutMs: groups.settings.recordLockDurationMs, responses: [], nodeEndpoints: [] })
    if (groupId === '' || memberId === '') return fail(ErrorCodes.INVALID_REQUEST, 'GroupId and MemberId must be set')
    try {
      groups.session(groupId, memberId, req.shareSessionEpoch, false)
    } catch (err) {
      if (err instanceof ShareError) return fail(err.code, err.message)
      throw err
    }
    const g = groups.group(groupId)
    const now = Date.now()
    const responses = req.topics.map((t) => ({
      topicId: t.topicId,
      partitions: t.partitions.map((p) => {
        const r = resolvePartition(ctx.broker, t.topicId, p.partitionIndex)
        const code = r.errorCode !== ErrorCodes.NONE ? r.errorCode : applyAcknowledgements(g.partitions.get(`${t.topicId}:${p.partitionIndex}`), p.acknowledgementBatches, memberId, now)
        return {
          partitionIndex: p.partitionIndex,
          errorCode: code,
          errorMessage: code === ErrorCodes.NONE ? null : (errorByCode(code)?.message ?? null),
          currentLeader: { leaderId: code === ErrorCodes.NONE ? ctx.broker.nodeId : -1, leaderEpoch: 0 },
        }
      }),
    }))
    groups.changed()
    return { throttleTimeMs: 0, errorCode: ErrorCodes.NONE, errorMessage: null, acquisitionLockTimeoutMs: groups.settings.recordLockDurationMs, responses, nodeEndpoints: [] }
  },
  errorResponse(req, errorCode) {
    const responses = req.topics.map((t) => ({
      topicId: t.topicId,
      partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode, errorMessage: null, currentLeader: { leaderId: -1, leaderEpoch: -1 } })),
    }))
    return { throttleTimeMs: 0, errorCode, errorMessage: null, responses, nodeEndpoints: [] }
  },
})
