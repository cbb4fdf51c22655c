import { ErrorCodes, OffsetDelete, type OffsetDeleteRequest, type OffsetDeleteResponse } from '@tidelog/protocol'
import { defineHandler } from './types.js'

/**
 * OffsetDelete 0 (KIP-496). Partitions this broker does not host are
 * answered UNKNOWN_TOPIC_OR_PARTITION, as KafkaApis does; for the others the
 * coordinator decides: any offset of an empty group goes, but a consumer group
 * with members keeps those of topics a member subscribes to
 * (GROUP_SUBSCRIBED_TO_TOPIC).
 */
export const offsetDeleteHandler = defineHandler({
  api: OffsetDelete,
  minVersion: 0,
  maxVersion: 0,
  handle(ctx, req: OffsetDeleteRequest): OffsetDeleteResponse {
    const { groups, topics } = ctx.broker
    const codes = req.topics.map((t) => t.partitions.map((): number => ErrorCodes.NONE))
    const asked: { topic: string; partition: number }[] = []
    const slots: [number, number][] = []
    req.topics.forEach((t, ti) => {
      const topic = topics.get(t.name)
      t.partitions.forEach((p, pi) => {
        if (topic === undefined || p.partitionIndex < 0 || p.partitionIndex >= topic.logs.length) {
          codes[ti]![pi] = ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION
          return
        }
        asked.push({ topic: t.name, partition: p.partitionIndex })
        slots.push([ti, pi])
      })
    })
    const r = groups.deleteOffsets(req.groupId, asked)
    r.errors.forEach((code, i) => {
      const [ti, pi] = slots[i]!
      codes[ti]![pi] = code
    })
    // With a group error the coordinator answers no partition; those refused above still are.
    const answered = (ti: number, pi: number) => r.errorCode === ErrorCodes.NONE || codes[ti]![pi] !== ErrorCodes.NONE
    const out = req.topics
      .map((t, ti) => ({
        name: t.name,
        partitions: t.partitions.flatMap((p, pi) => (answered(ti, pi) ? [{ partitionIndex: p.partitionIndex, errorCode: codes[ti]![pi]! }] : [])),
      }))
      .filter((t) => t.partitions.length > 0)
    return { errorCode: r.errorCode, throttleTimeMs: 0, topics: out }
  },
  errorResponse(_req, errorCode) {
    return { errorCode, throttleTimeMs: 0, topics: [] }
  },
})
