import { Deadline, isRetriable, isStaleMetadataError, listOffsetsOnNode, sleep, type Cluster, type ListedOffset, type OffsetQuery } from '@tidelog/client'
import { ErrorCodes, ProtocolError } from '@tidelog/protocol'
import { tpKey } from './types.js'

export { EARLIEST_TIMESTAMP, LATEST_TIMESTAMP } from '@tidelog/client'
export type { OffsetQuery } from '@tidelog/client'
export type OffsetAnswer = ListedOffset

/**
 * ListOffsets for many partitions: one request per leader (the client's listOffsetsOnNode,
 * shared with Admin.listOffsets), partitions whose leader moved (or is unknown) asked again
 * after a metadata refresh, until the deadline (Java's OffsetFetcher). Other errors are thrown.
 */
export async function lookupOffsets(cluster: Cluster, queries: readonly OffsetQuery[], isolationLevel: 0 | 1, timeoutMs: number): Promise<Map<string, OffsetAnswer>> {
  const out = new Map<string, OffsetAnswer>()
  const deadline = new Deadline(timeoutMs)
  let pending = queries.slice()
  for (let attempt = 0; pending.length > 0; attempt++) {
    const metadata = cluster.metadata
    const byLeader = new Map<number, OffsetQuery[]>()
    const again: OffsetQuery[] = []
    let lastError: Error | undefined
    for (const q of pending) {
      const leader = metadata.leader(q.topic, q.partition)
      if (leader === undefined) {
        again.push(q)
        lastError = new ProtocolError(ErrorCodes.LEADER_NOT_AVAILABLE, { api: 'ListOffsets', topic: q.topic, partition: q.partition })
        continue
      }
      let list = byLeader.get(leader.nodeId)
      if (list === undefined) byLeader.set(leader.nodeId, (list = []))
      list.push(q)
    }
    await Promise.all(
      [...byLeader].map(async ([nodeId, list]) => {
        let answers: Map<string, OffsetAnswer | ProtocolError>
        try {
          answers = await listOffsetsOnNode(cluster, nodeId, metadata, list, isolationLevel, tpKey)
        } catch (err) {
          if (!isRetriable(err)) throw err
          lastError = err as Error
          again.push(...list)
          return
        }
        for (const q of list) {
          const a = answers.get(tpKey(q.topic, q.partition))
          if (a === undefined) {
            again.push(q)
          } else if (a instanceof ProtocolError) {
            if (!a.retriable && !isStaleMetadataError(a)) throw a
            lastError = a
            again.push(q)
          } else {
            out.set(tpKey(q.topic, q.partition), a)
          }
        }
      }),
    )
    pending = again
    if (pending.length === 0) break
    const delay = cluster.retryBackoff.delay(attempt)
    if (deadline.passedAfter(delay)) throw lastError ?? new ProtocolError(ErrorCodes.REQUEST_TIMED_OUT, { api: 'ListOffsets' })
    await sleep(delay)
    await cluster.refreshMetadata().catch(() => undefined)
  }
  return out
}
