import { ListConfigResources, ProtocolError, UnsupportedVersionError } from '@tidelog/protocol'
import { retry } from '../retry.js'
import { resourceTypeCode } from './configs.js'
import type { AdminContext } from './engine.js'
import type { ConfigResourceType } from './types.js'

/** A config resource the broker knows, as Java's ConfigResource (type and name). */
export interface ListedConfigResource {
  type: Exclude<ConfigResourceType, number> | number
  name: string
}

const TYPE_NAMES = new Map<number, Exclude<ConfigResourceType, number>>([
  [2, 'topic'],
  [4, 'broker'],
  [8, 'broker-logger'],
  [16, 'client-metrics'],
  [32, 'group'],
])
const CLIENT_METRICS = 16

/**
 * ListConfigResources (74; KIP-1142, Kafka 4.1+): the resources that have configs, of the given
 * types or of every type the broker lists (Java's listConfigResources()). Before Kafka 4.1 the
 * API is ListClientMetricsResources (v0), which lists client-metrics resources only: asking such
 * a broker for anything else fails with UnsupportedVersionError, as in Java.
 */
export async function listConfigResources(
  ctx: AdminContext,
  types: readonly ConfigResourceType[] = [],
  options: { timeoutMs?: number } = {},
): Promise<ListedConfigResource[]> {
  const timeoutMs = options.timeoutMs ?? ctx.timeoutMs
  const resourceTypes = [...new Set(types.map(resourceTypeCode))]
  const onlyClientMetrics = resourceTypes.length === 1 && resourceTypes[0] === CLIENT_METRICS
  return retry(
    async () => {
      const conn = await ctx.cluster.anyConnection()
      if (!conn.versions.supports(ListConfigResources, onlyClientMetrics ? 0 : 1)) {
        throw new UnsupportedVersionError(onlyClientMetrics ? 'ListClientMetricsResources (Kafka 3.7+)' : 'ListConfigResources with resource types (Kafka 4.1+)', ListConfigResources.apiKey, onlyClientMetrics ? 0 : 1)
      }
      const res = await conn.request(ListConfigResources, (v) => (v >= 1 ? { resourceTypes } : {}))
      if (res.errorCode !== 0) throw new ProtocolError(res.errorCode, { api: 'ListConfigResources', apiKey: ListConfigResources.apiKey })
      return res.configResources.map((r) => ({ type: TYPE_NAMES.get(r.resourceType ?? CLIENT_METRICS) ?? r.resourceType!, name: r.resourceName }))
    },
    { timeoutMs, backoff: ctx.cluster.retryBackoff, onRetry: (e) => ctx.cluster.handleError(e) },
  )
}
