import { DescribeLogDirs, ErrorCodes, ProtocolError } from '@tidelog/protocol'
import { perItem, type AdminContext, type Outcomes } from './engine.js'
import type { BrokerLogDirs } from './types.js'

/**
 * DescribeLogDirs (35) on each named broker (default: every broker in the metadata): its log
 * directories, their partitions and sizes and, from v4, the file system's total and usable
 * bytes. `topics` narrows the answer as Java's describeReplicaLogDirs does.
 */
export async function describeLogDirs(
  ctx: AdminContext,
  brokerIds?: readonly number[],
  options: { topics?: { topic: string; partitions: number[] }[]; timeoutMs?: number } = {},
): Promise<BrokerLogDirs[]> {
  if (ctx.cluster.metadata.updatedAt === 0) await ctx.cluster.connect()
  const ids = brokerIds ?? [...ctx.cluster.metadata.brokers.keys()].sort((a, b) => a - b)
  return perItem(ctx, 'describeLogDirs', ids, String, async (pending) => {
    const out: Outcomes<BrokerLogDirs> = new Map()
    await Promise.all(
      pending.map(async (nodeId) => {
        try {
          const conn = await ctx.cluster.connectionTo(nodeId)
          const res = await conn.request(DescribeLogDirs, { topics: options.topics ?? null })
          if (res.errorCode !== undefined && res.errorCode !== ErrorCodes.NONE) {
            out.set(String(nodeId), new ProtocolError(res.errorCode, { api: 'DescribeLogDirs', apiKey: DescribeLogDirs.apiKey }))
            return
          }
          out.set(String(nodeId), {
            nodeId,
            logDirs: res.results.map((d) => ({
              path: d.logDir,
              error: d.errorCode === ErrorCodes.NONE ? null : new ProtocolError(d.errorCode, { api: 'DescribeLogDirs', apiKey: DescribeLogDirs.apiKey, message: d.logDir }),
              totalBytes: d.totalBytes ?? -1n,
              usableBytes: d.usableBytes ?? -1n,
              partitions: d.topics.flatMap((t) =>
                t.partitions.map((p) => ({ topic: t.name, partition: p.partitionIndex, size: p.partitionSize, offsetLag: p.offsetLag, isFuture: p.isFutureKey })),
              ),
            })),
          })
        } catch (e) {
          out.set(String(nodeId), e instanceof Error ? e : new Error(String(e)))
        }
      }),
    )
    return out
  }, { timeoutMs: options.timeoutMs })
}
