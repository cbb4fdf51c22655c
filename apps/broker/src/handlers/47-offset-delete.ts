import { ErrorCodes, OffsetDelete, decodeConsumerProtocolSubscription } from '@tidelog/protocol'
import { defineHandler } from './types.js'

/**
 * OffsetDelete 0 (KIP-496): removes a group's committed offsets, except for
 * topics that its live members are subscribed to (GROUP_SUBSCRIBED_TO_TOPIC).
 */
export const offsetDeleteHandler = defineHandler({
  api: OffsetDelete,
  minVersion: 0,
  maxVersion: 0,
  handle(ctx, req) {
    const { groups } = ctx.broker
    if (req.groupId === '') return { errorCode: ErrorCodes.INVALID_GROUP_ID, throttleTimeMs: 0, topics: [] }
    const g = groups.groups.get(req.groupId)
    if (g === undefined && !groups.offsets.groupIds().includes(req.groupId)) {
      return { errorCode: ErrorCodes.GROUP_ID_NOT_FOUND, throttleTimeMs: 0, topics: [] }
    }
    const subscribed = new Set<string>()
    if (g !== undefined && !g.isEmpty) {
      if (g.protocolType !== 'consumer') return { errorCode: ErrorCodes.NON_EMPTY_GROUP, throttleTimeMs: 0, topics: [] }
      for (const m of g.members.values()) {
        const meta = m.protocols.find((p) => p.name === g.protocolName)?.metadata ?? m.protocols[0]?.metadata
        if (meta === undefined) continue
        try {
          for (const t of decodeConsumerProtocolSubscription(meta).topics) subscribed.add(t)
        } catch {
          // Metadata a consumer cannot have sent: it subscribes to nothing we can name.
        }
      }
    }
    const doomed: { topic: string; partition: number }[] = []
    const topics = req.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => {
        if (subscribed.has(t.name)) return { partitionIndex: p.partitionIndex, errorCode: ErrorCodes.GROUP_SUBSCRIBED_TO_TOPIC }
        if (ctx.broker.topics.get(t.name) === undefined) return { partitionIndex: p.partitionIndex, errorCode: ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION }
        doomed.push({ topic: t.name, partition: p.partitionIndex })
        return { partitionIndex: p.partitionIndex, errorCode: ErrorCodes.NONE }
      }),
    }))
    groups.offsets.deleteOffsets(req.groupId, doomed.filter((d) => groups.offsets.get(req.groupId, d.topic, d.partition) !== undefined))
    return { errorCode: ErrorCodes.NONE, throttleTimeMs: 0, topics }
  },
  errorResponse(_req, errorCode) {
    return { errorCode, throttleTimeMs: 0, topics: [] }
  },
})
