import {
  AlterConfigs,
  DescribeConfigs,
  IncrementalAlterConfigs,
  ProtocolError,
  UnsupportedVersionError,
  type DescribeConfigsRequest,
  type DescribeConfigsResponseResult,
} from '@tidelog/protocol'
import type { Connection } from '../connection.js'
import { isRetriable } from '../errors.js'
import { groupBy, perItem, perNode, type AdminContext, type Outcomes } from './engine.js'
import {
  ConfigSource,
  type AlterConfigOp,
  type AlterConfigResource,
  type ConfigEntry,
  type ConfigResource,
  type ConfigResourceResult,
  type ConfigResourceType,
} from './types.js'

/** Kafka's ConfigResource.Type codes. */
const RESOURCE_TYPES: Record<Exclude<ConfigResourceType, number>, number> = {
  topic: 2,
  broker: 4,
  'broker-logger': 8,
  'client-metrics': 16,
  group: 32,
}
const BROKER = 4
const BROKER_LOGGER = 8
export const OPS: Record<AlterConfigOp, number> = { set: 0, delete: 1, append: 2, subtract: 3 }

export function resourceTypeCode(type: ConfigResourceType): number {
  if (typeof type === 'number') return type
  const code = RESOURCE_TYPES[type]
  if (code === undefined) throw new TypeError(`unknown config resource type ${JSON.stringify(type)}`)
  return code
}

/**
 * As Java's KafkaAdminClient: an error the broker gives for one resource (an unknown
 * topic, a refused value) settles that resource at once; only a failed request is retried.
 */
export const finalResourceErrors = (e: Error): boolean => !(e instanceof ProtocolError) && isRetriable(e)

export const key = (r: { type: ConfigResourceType; name: string }): string => `${resourceTypeCode(r.type)}:${r.name}`

/**
 * A broker's own configs (and its loggers) can only be read or changed on that broker, as in
 * Java; everything else goes to any broker. -1 means "any".
 */
export function targetNode(r: { type: ConfigResourceType; name: string }): number {
  const t = resourceTypeCode(r.type)
  if ((t === BROKER || t === BROKER_LOGGER) && /^\d+$/.test(r.name)) return Number(r.name)
  return -1
}

export function connectionFor(ctx: AdminContext, nodeId: number): Promise<Connection> {
  return nodeId < 0 ? ctx.cluster.anyConnection() : ctx.cluster.connectionTo(nodeId)
}

function toResult(r: DescribeConfigsResponseResult): ConfigResourceResult {
  return {
    type: r.resourceType,
    name: r.resourceName,
    configs: r.configs.map(
      (c): ConfigEntry => ({
        name: c.name,
        value: c.value,
        readOnly: c.readOnly,
        // v0 says isDefault; later versions give the source instead (v0 decodes it as -1).
        isDefault: c.configSource !== undefined && c.configSource >= 0 ? c.configSource === ConfigSource.DEFAULT_CONFIG : c.isDefault === true,
        isSensitive: c.isSensitive,
        source: c.configSource ?? -1,
        synonyms: (c.synonyms ?? []).map((s) => ({ name: s.name, value: s.value, source: s.source })),
        type: c.configType ?? 0,
        documentation: c.documentation ?? null,
      }),
    ),
  }
}

export async function describeConfigs(
  ctx: AdminContext,
  resources: readonly ConfigResource[],
  options: { includeSynonyms?: boolean; includeDocumentation?: boolean; timeoutMs?: number } = {},
): Promise<ConfigResourceResult[]> {
  return perItem(ctx, 'describeConfigs', resources, key, async (pending) => {
    if (ctx.cluster.metadata.updatedAt === 0) await ctx.cluster.connect()
    return perNode(groupBy(pending, targetNode), key, async (nodeId, list) => {
      const conn = await connectionFor(ctx, nodeId)
      const res = await conn.request(DescribeConfigs, (v) => {
        const req: DescribeConfigsRequest = {
          resources: list.map((r) => ({ resourceType: resourceTypeCode(r.type), resourceName: r.name, configurationKeys: r.keys ?? null })),
        }
        if (v >= 1) req.includeSynonyms = options.includeSynonyms === true
        if (v >= 3) req.includeDocumentation = options.includeDocumentation === true
        return req
      })
      const out: Outcomes<ConfigResourceResult> = new Map()
      for (const r of res.results) {
        out.set(
          `${r.resourceType}:${r.resourceName}`,
          r.errorCode !== 0
            ? new ProtocolError(r.errorCode, { api: 'DescribeConfigs', apiKey: DescribeConfigs.apiKey, topic: r.resourceType === 2 ? r.resourceName : undefined, message: r.errorMessage ?? `${r.resourceName}` })
            : toResult(r),
        )
      }
      return out
    })
  }, { timeoutMs: options.timeoutMs })
}

/**
 * IncrementalAlterConfigs (KIP-339, Kafka 2.3+) changes only the keys named. Older brokers have
 * only AlterConfigs, which replaces a resource's whole dynamic config; there we read the current
 * dynamic values first and send them with the changes applied, which keeps the incremental
 * meaning (at the cost of a race with concurrent writers, and not for sensitive values, which
 * brokers never return).
 */
export async function alterConfigs(
  ctx: AdminContext,
  resources: readonly AlterConfigResource[],
  options: { validateOnly?: boolean; timeoutMs?: number } = {},
): Promise<void> {
  const validateOnly = options.validateOnly === true
  await perItem(ctx, 'alterConfigs', resources, key, async (pending) => {
    if (ctx.cluster.metadata.updatedAt === 0) await ctx.cluster.connect()
    return perNode(groupBy(pending, targetNode), key, async (nodeId, list) => {
      const conn = await connectionFor(ctx, nodeId)
      const out: Outcomes<true> = new Map()
      const record = (r: { errorCode: number; errorMessage: string | null; resourceType: number; resourceName: string }, api: string) =>
        out.set(
          `${r.resourceType}:${r.resourceName}`,
          r.errorCode === 0 ? true : new ProtocolError(r.errorCode, { api, topic: r.resourceType === 2 ? r.resourceName : undefined, message: r.errorMessage ?? r.resourceName }),
        )
      if (conn.versions.supports(IncrementalAlterConfigs)) {
        const res = await conn.request(IncrementalAlterConfigs, {
          resources: list.map((r) => ({
            resourceType: resourceTypeCode(r.type),
            resourceName: r.name,
            configs: r.configs.map((c) => ({ name: c.name, configOperation: OPS[c.op ?? 'set'], value: c.value ?? null })),
          })),
          validateOnly,
        })
        for (const r of res.responses) record(r, 'IncrementalAlterConfigs')
        return out
      }
      const merged = await Promise.all(list.map((r) => mergeLegacy(conn, r)))
      const res = await conn.request(AlterConfigs, { resources: merged, validateOnly })
      for (const r of res.responses) record(r, 'AlterConfigs')
      return out
    })
  }, { timeoutMs: options.timeoutMs, retriable: finalResourceErrors })
}

/** The sources that make up a resource's own dynamic config, the part AlterConfigs replaces. */
function ownSource(type: number, name: string): number {
  if (type === 2) return ConfigSource.DYNAMIC_TOPIC_CONFIG
  if (type === BROKER) return name === '' ? ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG : ConfigSource.DYNAMIC_BROKER_CONFIG
  if (type === BROKER_LOGGER) return ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG
  return -2
}

async function mergeLegacy(conn: Connection, r: AlterConfigResource) {
  const type = resourceTypeCode(r.type)
  const described = await conn.request(DescribeConfigs, { resources: [{ resourceType: type, resourceName: r.name, configurationKeys: null }] })
  const result = described.results[0]
  if (result === undefined) throw new ProtocolError(-1, { api: 'DescribeConfigs', message: `no result for ${r.name}` })
  if (result.errorCode !== 0) throw new ProtocolError(result.errorCode, { api: 'DescribeConfigs', message: result.errorMessage })
  const source = ownSource(type, r.name)
  const current = new Map<string, string | null>()
  for (const c of result.configs) {
    const own = c.configSource !== undefined && c.configSource >= 0 ? c.configSource === source : c.isDefault === false && !c.readOnly
    if (own) current.set(c.name, c.value)
  }
  for (const c of r.configs) {
    const op = c.op ?? 'set'
    if (op === 'set') current.set(c.name, c.value ?? null)
    else if (op === 'delete') current.delete(c.name)
    else throw new UnsupportedVersionError(`AlterConfigs ${op} (needs IncrementalAlterConfigs, Kafka 2.3+)`, AlterConfigs.apiKey, conn.versions.highest(AlterConfigs))
  }
  for (const [name, value] of current) {
    if (value === null) {
      throw new UnsupportedVersionError(
        `AlterConfigs on ${r.name}: ${name} is sensitive and cannot be carried over (needs IncrementalAlterConfigs, Kafka 2.3+)`,
        AlterConfigs.apiKey,
        conn.versions.highest(AlterConfigs),
      )
    }
  }
  return { resourceType: type, resourceName: r.name, configs: [...current].map(([name, value]) => ({ name, value })) }
}
