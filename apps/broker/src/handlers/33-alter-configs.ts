import { AlterConfigs } from '@tidelog/protocol'
import { alterResource, replaceAll } from '../config-changes.js'
import { defineHandler } from './types.js'

/**
 * AlterConfigs 0-2: each resource's overrides are replaced by exactly the given set
 * (a topic's, this broker's dynamic configs, or the cluster default's), as Kafka does;
 * IncrementalAlterConfigs changes single keys instead. Resources are independent: one
 * refused leaves the others applied.
 */
export const alterConfigsHandler = defineHandler({
  api: AlterConfigs,
  minVersion: 0,
  maxVersion: 2,
  async handle(ctx, req) {
    const responses = []
    for (const r of req.resources) {
      const result = await alterResource(ctx.broker, r.resourceType, r.resourceName, replaceAll(r.configs), req.validateOnly)
      responses.push({ ...result, resourceType: r.resourceType, resourceName: r.resourceName })
    }
    return { throttleTimeMs: 0, responses }
  },
  errorResponse(req, errorCode) {
    return { throttleTimeMs: 0, responses: req.resources.map((r) => ({ errorCode, errorMessage: null, resourceType: r.resourceType, resourceName: r.resourceName })) }
  },
})
