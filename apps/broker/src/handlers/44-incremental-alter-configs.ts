import { IncrementalAlterConfigs } from '@tidelog/protocol'
import { alterResource, incremental } from '../config-changes.js'
import { defineHandler } from './types.js'

/**
 * IncrementalAlterConfigs 0-1 (KIP-339): SET / DELETE / APPEND / SUBTRACT on a topic's
 * overrides, this broker's dynamic configs or the cluster default's, validated as a
 * whole after the operations, as Kafka's ConfigAdminManager does.
 */
export const incrementalAlterConfigsHandler = defineHandler({
  api: IncrementalAlterConfigs,
  minVersion: 0,
  maxVersion: 1,
  async handle(ctx, req) {
    const responses = []
    for (const r of req.resources) {
      const result = await alterResource(ctx.broker, r.resourceType, r.resourceName, incremental(r.configs), req.validateOnly)
      responses.push({ ...result, resourceType: r.resourceType, resourceName: r.resourceName })
    }
    return { throttleTimeMs: 0, responses }
  },
  errorResponse(req, errorCode) {
    return { throttleTimeMs: 0, responses: req.resources.map((r) => ({ errorCode, errorMessage: null, resourceType: r.resourceType, resourceName: r.resourceName })) }
  },
})
