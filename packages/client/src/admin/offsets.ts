import { DeleteRecords, ErrorCodes, ProtocolError } from '@tidelog/protocol'
import { EARLIEST_TIMESTAMP as EARLIEST, LATEST_TIMESTAMP as LATEST, MAX_TIMESTAMP, listOffsetsOnNode } from '../list-offsets.js'
import type { ClusterMetadata } from '../metadata.js'
import { groupBy, perItem, perNode, type AdminContext, type Outcomes } from './engine.js'
import type { DeletedRecords, DeleteRecordsRequest, OffsetSpec, PartitionOffset, PartitionOffsetRequest } from './types.js'

export function offsetSpecTimestamp(spec: OffsetSpec | undefined): bigint {
  if (spec === undefined || spec === 'latest') return LATEST
  if (spec === 'earliest') return EARLIEST
  if (spec === 'max-timestamp') return MAX_TIMESTAMP
  if (typeof spec === 'number') {
    if (!Number.isSafeInteger(spec)) throw new TypeError(`offset spec timestamp ${spec} is not an integer`)
    return BigInt(spec)
  }
  if (typeof spec === 'bigint') return spec
  throw new TypeError(`unknown offset spec ${JSON.stringify(spec)}`)
}

const key = (r: { topic: string; partition: number }): string => `${r.topic}-${r.partition}`

/**
 * The partitions' leaders per the metadata, fetched fresh for the topics involved; partitions
 * without a usable leader get the matching retriable error so they are tried again.
 */
async function leaders<I extends { topic: string; partition: number }>(
  ctx: AdminContext,
  items: I[],
  api: string,
  deadlineMs: number,
): Promise<{ metadata: ClusterMetadata; byLeader: Map<number, I[]>; errors: Outcomes<never> }> {
  const topics = [...new Set(items.map((i) => i.topic))]
  const { metadata, topicErrors } = await ctx.cluster.fetchMetadata(topics, { timeoutMs: deadlineMs, allowAutoTopicCreation: false })
  const errors: Outcomes<never> = new Map()
  const routable: I[] = []
  for (const item of items) {
    const topicError = topicErrors.get(item.topic)
    const p = metadata.partition(item.topic, item.partition)
    let code: number = ErrorCodes.NONE
    if (topicError !== undefined) code = topicError
    else if (metadata.topic(item.topic) === undefined || p === undefined) code = ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION
    else if (p.leader < 0 || !metadata.brokers.has(p.leader)) code = ErrorCodes.LEADER_NOT_AVAILABLE
    if (code !== ErrorCodes.NONE) errors.set(key(item), new ProtocolError(code, { api, topic: item.topic, partition: item.partition }))
    else routable.push(item)
  }
  return { metadata, byLeader: groupBy(routable, (i) => metadata.partition(i.topic, i.partition)!.leader), errors }
}

function byTopic<I extends { topic: string }>(items: I[]): Map<string, I[]> {
  const out = new Map<string, I[]>()
  for (const i of items) {
    let list = out.get(i.topic)
    if (list === undefined) out.set(i.topic, (list = []))
    list.push(i)
  }
  return out
}

export async function listOffsets(
  ctx: AdminContext,
  requests: readonly PartitionOffsetRequest[],
  options: { isolationLevel?: 'read_uncommitted' | 'read_committed'; timeoutMs?: number } = {},
): Promise<PartitionOffset[]> {
  const items = requests.map((r) => ({ topic: r.topic, partition: r.partition, timestamp: offsetSpecTimestamp(r.timestamp) }))
  const isolationLevel = options.isolationLevel === 'read_committed' ? 1 : 0
  return perItem(ctx, 'listOffsets', items, key, async (pending, deadline) => {
    const { metadata, byLeader, errors } = await leaders(ctx, pending, 'ListOffsets', deadline.remaining())
    const answers = await perNode(byLeader, key, async (nodeId, list) => {
      const out: Outcomes<PartitionOffset> = new Map()
      for (const [k, a] of await listOffsetsOnNode(ctx.cluster, nodeId, metadata, list, isolationLevel, (topic, partition) => key({ topic, partition }))) {
        out.set(k, a instanceof Error ? a : { topic: a.topic, partition: a.partition, offset: a.offset, timestamp: a.timestamp, leaderEpoch: a.leaderEpoch })
      }
      return out
    })
    for (const [k, e] of errors) answers.set(k, e)
    return answers
  }, { timeoutMs: options.timeoutMs })
}

/** Every partition of a topic, for the `listOffsets(topic)` form. */
export async function topicPartitions(ctx: AdminContext, topic: string, timeoutMs?: number): Promise<number[]> {
  const { metadata, topicErrors } = await ctx.cluster.fetchMetadata([topic], { timeoutMs: timeoutMs ?? ctx.timeoutMs, allowAutoTopicCreation: false })
  const code = topicErrors.get(topic)
  if (code !== undefined) throw new ProtocolError(code, { api: 'Metadata', topic })
  const t = metadata.topic(topic)
  if (t === undefined) throw new ProtocolError(ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION, { api: 'Metadata', topic })
  return t.partitions.map((p) => p.partition)
}

export async function deleteRecords(
  ctx: AdminContext,
  requests: readonly DeleteRecordsRequest[],
  options: { timeoutMs?: number } = {},
): Promise<DeletedRecords[]> {
  const timeoutMs = options.timeoutMs ?? ctx.timeoutMs
  return perItem(ctx, 'deleteRecords', requests, key, async (pending, deadline) => {
    const { byLeader, errors } = await leaders(ctx, pending, 'DeleteRecords', deadline.remaining())
    const answers = await perNode(byLeader, key, async (nodeId, list) => {
      const res = await ctx.cluster.send(nodeId, DeleteRecords, {
        topics: [...byTopic(list)].map(([name, parts]) => ({
          name,
          partitions: parts.map((p) => ({ partitionIndex: p.partition, offset: p.offset })),
        })),
        timeoutMs: Math.max(1, Math.min(timeoutMs, Math.floor(deadline.remaining()))),
      })
      const out: Outcomes<DeletedRecords> = new Map()
      for (const t of res.topics) {
        for (const p of t.partitions) {
          out.set(
            `${t.name}-${p.partitionIndex}`,
            p.errorCode !== 0
              ? new ProtocolError(p.errorCode, { api: 'DeleteRecords', apiKey: DeleteRecords.apiKey, topic: t.name, partition: p.partitionIndex })
              : { topic: t.name, partition: p.partitionIndex, lowWatermark: p.lowWatermark },
          )
        }
      }
      return out
    })
    for (const [k, e] of errors) answers.set(k, e)
    return answers
  }, { timeoutMs })
}
