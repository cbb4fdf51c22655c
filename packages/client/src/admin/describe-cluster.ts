import { DescribeCluster, ProtocolError } from '@tidelog/protocol'
import { retry } from '../retry.js'
import type { AdminContext } from './engine.js'
import type { ClusterDescription } from './types.js'

/** DescribeCluster (KIP-700, Kafka 2.8+) where the broker has it, else the answer of Metadata. */
export async function describeCluster(ctx: AdminContext, options: { timeoutMs?: number } = {}): Promise<ClusterDescription> {
  const timeoutMs = options.timeoutMs ?? ctx.timeoutMs
  return retry(
    async () => {
      const conn = await ctx.cluster.anyConnection()
      if (!conn.versions.supports(DescribeCluster)) {
        const { metadata } = await ctx.cluster.fetchMetadata([], { timeoutMs })
        return {
          clusterId: metadata.clusterId,
          controllerId: metadata.controllerId,
          brokers: [...metadata.brokers.values()].sort((a, b) => a.nodeId - b.nodeId),
        }
      }
      const res = await conn.request(DescribeCluster, (v) => (v >= 1 ? { includeClusterAuthorizedOperations: false, endpointType: 1 } : { includeClusterAuthorizedOperations: false }))
      if (res.errorCode !== 0) throw new ProtocolError(res.errorCode, { api: 'DescribeCluster', apiKey: DescribeCluster.apiKey, message: res.errorMessage })
      return {
        clusterId: res.clusterId,
        controllerId: res.controllerId,
        brokers: res.brokers.map((b) => ({ nodeId: b.brokerId, host: b.host, port: b.port, rack: b.rack })).sort((a, b) => a.nodeId - b.nodeId),
      }
    },
    { timeoutMs, backoff: ctx.cluster.retryBackoff, onRetry: (e) => ctx.cluster.handleError(e) },
  )
}
