import { DescribeClientQuotas, type DescribeClientQuotasRequest, type DescribeClientQuotasResponseEntryData, ErrorCodes } from '@tidelog/protocol'
import { ENTITY_TYPES, type EntityType, type QuotaEntity, type QuotaStore } from '../quotas/store.js'
import { defineHandler } from './types.js'

// DescribeClientQuotasRequest's MatchType values.
const MATCH_EXACT = 0
const MATCH_DEFAULT = 1
const MATCH_SPECIFIED = 2

class FilterError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message)
  }
}

interface Filter {
  exact: Map<string, string | null>
  specified: Set<string>
  strict: boolean
}

/** The checks of Kafka's ClientQuotasImage.describe, with its messages. */
function parseFilter(req: DescribeClientQuotasRequest): Filter {
  const exact = new Map<string, string | null>()
  const specified = new Set<string>()
  for (const c of req.components) {
    if (c.entityType === '') throw new FilterError(ErrorCodes.INVALID_REQUEST, 'Invalid empty entity type.')
    if (exact.has(c.entityType) || specified.has(c.entityType)) {
      throw new FilterError(ErrorCodes.INVALID_REQUEST, `Entity type ${c.entityType} cannot appear more than once in the filter.`)
    }
    if (!(ENTITY_TYPES as readonly string[]).includes(c.entityType)) throw new FilterError(ErrorCodes.UNSUPPORTED_VERSION, `Unsupported entity type ${c.entityType}`)
    switch (c.matchType) {
      case MATCH_EXACT:
        if (c.match === null) throw new FilterError(ErrorCodes.INVALID_REQUEST, 'Request specified MATCH_TYPE_EXACT, but set match string to null.')
        exact.set(c.entityType, c.match)
        break
      case MATCH_DEFAULT:
        if (c.match !== null) throw new FilterError(ErrorCodes.INVALID_REQUEST, 'Request specified MATCH_TYPE_DEFAULT, but also specified a match string.')
        exact.set(c.entityType, null)
        break
      case MATCH_SPECIFIED:
        if (c.match !== null) throw new FilterError(ErrorCodes.INVALID_REQUEST, 'Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.')
        specified.add(c.entityType)
        break
      default:
        throw new FilterError(ErrorCodes.INVALID_REQUEST, `Unknown match type ${c.matchType}`)
    }
  }
  const has = (t: string) => exact.has(t) || specified.has(t)
  if (has('ip') && (has('user') || has('client-id'))) {
    throw new FilterError(
      ErrorCodes.INVALID_REQUEST,
      'Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.',
    )
  }
  return { exact, specified, strict: req.strict }
}

function matches(entity: QuotaEntity, f: Filter): boolean {
  const types = Object.keys(entity) as EntityType[]
  if (f.strict && types.length !== f.exact.size + f.specified.size) return false
  for (const [type, name] of f.exact) if (!(type in entity) || entity[type as EntityType] !== name) return false
  for (const type of f.specified) if (!(type in entity)) return false
  return true
}

/** DescribeClientQuotas 0-1 (KIP-546): the entities a filter matches, each with its quota values. */
export function describeClientQuotasHandler(store: QuotaStore) {
  return defineHandler({
    api: DescribeClientQuotas,
    minVersion: 0,
    maxVersion: 1,
    handle(_ctx, req) {
      let filter: Filter
      try {
        filter = parseFilter(req)
      } catch (err) {
        if (!(err instanceof FilterError)) throw err
        return { throttleTimeMs: 0, errorCode: err.code, errorMessage: err.message, entries: null }
      }
      const entries: DescribeClientQuotasResponseEntryData[] = []
      for (const { entity, values } of store.all()) {
        if (!matches(entity, filter)) continue
        entries.push({
          entity: ENTITY_TYPES.filter((t) => t in entity).map((t) => ({ entityType: t, entityName: entity[t] ?? null })),
          values: [...values].map(([key, value]) => ({ key, value })),
        })
      }
      return { throttleTimeMs: 0, errorCode: ErrorCodes.NONE, errorMessage: null, entries }
    },
    errorResponse(_req, errorCode) {
      return { throttleTimeMs: 0, errorCode, errorMessage: null, entries: null }
    },
  })
}
