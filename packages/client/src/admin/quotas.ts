import { AlterClientQuotas, DescribeClientQuotas, ErrorCodes, ProtocolError } from '@tidelog/protocol'
import { retry } from '../retry.js'
import { type AdminContext, type Outcomes, perItem } from './engine.js'

/**
 * Java's ClientQuotaEntity: entity type (`user`, `client-id`, `ip`) to name, where null is
 * that type's default entity (kafka-configs.sh's --entity-default).
 */
export type ClientQuotaEntity = Partial<Record<'user' | 'client-id' | 'ip', string | null>>

/**
 * Java's ClientQuotaFilterComponent: `match` a name (ofEntity), null for the default entity
 * (ofDefaultEntity), or left out for any entity of that type (ofEntityType).
 */
export interface ClientQuotaFilterComponent {
  entityType: 'user' | 'client-id' | 'ip'
  match?: string | null
}

/** Java's ClientQuotaFilter: components must all match; strict (containsOnly) also excludes entities of other types. */
export interface ClientQuotaFilter {
  components?: ClientQuotaFilterComponent[]
  strict?: boolean
}

/** One entity and its quota values (producer_byte_rate, consumer_byte_rate, request_percentage, ...). */
export interface ClientQuotaEntry {
  entity: ClientQuotaEntity
  values: Record<string, number>
}

/** Java's ClientQuotaAlteration: per key a new value, or null to remove it. */
export interface ClientQuotaAlteration {
  entity: ClientQuotaEntity
  ops: { key: string; value: number | null }[]
}

// DescribeClientQuotasRequest's MatchType.
const MATCH_EXACT = 0
const MATCH_DEFAULT = 1
const MATCH_SPECIFIED = 2

const entityPairs = (e: ClientQuotaEntity) => Object.entries(e).map(([entityType, entityName]) => ({ entityType, entityName: entityName ?? null }))
const entityOf = (pairs: readonly { entityType: string; entityName: string | null }[]): ClientQuotaEntity =>
  Object.fromEntries(pairs.map((p) => [p.entityType, p.entityName])) as ClientQuotaEntity
// Java's ClientQuotaEntity equality is by its map, whatever order the broker lists types in.
const entityKey = (e: ClientQuotaEntity): string => JSON.stringify(Object.entries(e).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))

/** DescribeClientQuotas (48, KIP-546): the entities the filter matches (default: all) with their values. */
export async function describeClientQuotas(ctx: AdminContext, filter: ClientQuotaFilter = {}, options: { timeoutMs?: number } = {}): Promise<ClientQuotaEntry[]> {
  const components = (filter.components ?? []).map((c) => ({
    entityType: c.entityType,
    matchType: c.match === undefined ? MATCH_SPECIFIED : c.match === null ? MATCH_DEFAULT : MATCH_EXACT,
    match: c.match ?? null,
  }))
  return retry(
    async () => {
      const conn = await ctx.cluster.anyConnection()
      const res = await conn.request(DescribeClientQuotas, { components, strict: filter.strict ?? false })
      if (res.errorCode !== ErrorCodes.NONE) throw new ProtocolError(res.errorCode, { api: 'DescribeClientQuotas', apiKey: DescribeClientQuotas.apiKey, message: res.errorMessage })
      return (res.entries ?? []).map((e) => ({ entity: entityOf(e.entity), values: Object.fromEntries(e.values.map((v) => [v.key, v.value])) }))
    },
    { timeoutMs: options.timeoutMs ?? ctx.timeoutMs, backoff: ctx.cluster.retryBackoff, onRetry: (e) => ctx.cluster.handleError(e) },
  )
}

/**
 * AlterClientQuotas (49): each entity is changed or fails with its own error (INVALID_REQUEST
 * with the broker's message); an AdminError lists the failures. validateOnly checks and
 * changes nothing.
 */
export async function alterClientQuotas(
  ctx: AdminContext,
  alterations: readonly ClientQuotaAlteration[],
  options: { timeoutMs?: number; validateOnly?: boolean } = {},
): Promise<void> {
  await perItem(
    ctx,
    'alterClientQuotas',
    alterations,
    (a) => entityKey(a.entity),
    async (pending) => {
      const conn = await ctx.cluster.anyConnection()
      const res = await conn.request(AlterClientQuotas, {
        entries: pending.map((a) => ({ entity: entityPairs(a.entity), ops: a.ops.map((op) => ({ key: op.key, value: op.value ?? 0, remove: op.value === null })) })),
        validateOnly: options.validateOnly ?? false,
      })
      const out: Outcomes<true> = new Map()
      for (const r of res.entries) {
        out.set(
          entityKey(entityOf(r.entity)),
          r.errorCode === ErrorCodes.NONE ? true : new ProtocolError(r.errorCode, { api: 'AlterClientQuotas', apiKey: AlterClientQuotas.apiKey, message: r.errorMessage }),
        )
      }
      return out
    },
    options,
  )
}
