import { AlterClientQuotas, ErrorCodes } from '@tidelog/protocol'
import type { QuotaStore } from '../quotas/store.js'
import { defineHandler } from './types.js'

/**
 * AlterClientQuotas 0-1 (KIP-546): sets or removes quota values per entity, each entity
 * validated on its own (INVALID_REQUEST with Kafka's message) and answered once, as Kafka's
 * controller does; with validate_only nothing changes. Applied changes count from the next request on and are durable before the answer.
 */
export function alterClientQuotasHandler(store: QuotaStore) {
  return defineHandler({
    api: AlterClientQuotas,
    minVersion: 0,
    maxVersion: 1,
    async handle(_ctx, req) {
      const results = await store.alter(req.entries, req.validateOnly)
      return {
        throttleTimeMs: 0,
        entries: results.map((r) => ({
          errorCode: r.error === undefined ? ErrorCodes.NONE : ErrorCodes.INVALID_REQUEST,
          errorMessage: r.error ?? null,
          entity: r.entity.map((x) => ({ entityType: x.entityType, entityName: x.entityName })),
        })),
      }
    },
    errorResponse(req, errorCode) {
      return {
        throttleTimeMs: 0,
        entries: req.entries.map((e) => ({ errorCode, errorMessage: null, entity: e.entity.map((x) => ({ entityType: x.entityType, entityName: x.entityName })) })),
      }
    },
  })
}
