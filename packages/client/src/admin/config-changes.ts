import { AlterConfigs, IncrementalAlterConfigs, ProtocolError, UnsupportedVersionError } from '@tidelog/protocol'
import { OPS, finalResourceErrors, connectionFor, key, resourceTypeCode, targetNode } from './configs.js'
import { groupBy, perItem, perNode, type AdminContext, type Outcomes } from './engine.js'
import type { AlterConfigResource, ReplaceConfigResource } from './types.js'

type ResourceResponse = { errorCode: number; errorMessage: string | null; resourceType: number; resourceName: string }

function outcomes(responses: readonly ResourceResponse[], api: string, apiKey: number): Outcomes<true> {
  const out: Outcomes<true> = new Map()
  for (const r of responses) {
    out.set(
      `${r.resourceType}:${r.resourceName}`,
      r.errorCode === 0 ? true : new ProtocolError(r.errorCode, { api, apiKey, topic: r.resourceType === 2 ? r.resourceName : undefined, message: r.errorMessage ?? r.resourceName }),
    )
  }
  return out
}

/**
 * IncrementalAlterConfigs (44, KIP-339) only: SET / DELETE / APPEND / SUBTRACT on the named
 * keys. Unlike alterConfigs there is no AlterConfigs fallback, so a broker before Kafka 2.3
 * gives UnsupportedVersionError rather than a read-modify-write.
 */
export async function incrementalAlterConfigs(
  ctx: AdminContext,
  resources: readonly AlterConfigResource[],
  options: { validateOnly?: boolean; timeoutMs?: number } = {},
): Promise<void> {
  await perItem(ctx, 'incrementalAlterConfigs', resources, key, async (pending) => {
    if (ctx.cluster.metadata.updatedAt === 0) await ctx.cluster.connect()
    return perNode(groupBy(pending, targetNode), key, async (nodeId, list) => {
      const conn = await connectionFor(ctx, nodeId)
      if (!conn.versions.supports(IncrementalAlterConfigs)) {
        throw new UnsupportedVersionError('IncrementalAlterConfigs (Kafka 2.3+)', IncrementalAlterConfigs.apiKey, -1)
      }
      const res = await conn.request(IncrementalAlterConfigs, {
        resources: list.map((r) => ({
          resourceType: resourceTypeCode(r.type),
          resourceName: r.name,
          configs: r.configs.map((c) => ({ name: c.name, configOperation: OPS[c.op ?? 'set'], value: c.value ?? null })),
        })),
        validateOnly: options.validateOnly === true,
      })
      return outcomes(res.responses, 'IncrementalAlterConfigs', IncrementalAlterConfigs.apiKey)
    })
  }, { timeoutMs: options.timeoutMs, retriable: finalResourceErrors })
}

/**
 * AlterConfigs (33): each resource's dynamic configs become exactly the given set; every
 * key not named is removed (Java's deprecated Admin.alterConfigs). alterConfigs changes
 * single keys instead.
 */
export async function replaceConfigs(
  ctx: AdminContext,
  resources: readonly ReplaceConfigResource[],
  options: { validateOnly?: boolean; timeoutMs?: number } = {},
): Promise<void> {
  await perItem(ctx, 'replaceConfigs', resources, key, async (pending) => {
    if (ctx.cluster.metadata.updatedAt === 0) await ctx.cluster.connect()
    return perNode(groupBy(pending, targetNode), key, async (nodeId, list) => {
      const conn = await connectionFor(ctx, nodeId)
      const res = await conn.request(AlterConfigs, {
        resources: list.map((r) => ({
          resourceType: resourceTypeCode(r.type),
          resourceName: r.name,
          configs: Object.entries(r.configs).map(([name, value]) => ({ name, value })),
        })),
        validateOnly: options.validateOnly === true,
      })
      return outcomes(res.responses, 'AlterConfigs', AlterConfigs.apiKey)
    })
  }, { timeoutMs: options.timeoutMs, retriable: finalResourceErrors })
}
