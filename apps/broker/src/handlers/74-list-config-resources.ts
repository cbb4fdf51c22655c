import { ErrorCodes, ListConfigResources, type ListConfigResourcesResponseConfigResource } from '@tidelog/protocol'
import { defineHandler } from './types.js'

/** ConfigResource.Type ids, as Kafka numbers them. */
const TOPIC = 2
const BROKER = 4
const BROKER_LOGGER = 8
const CLIENT_METRICS = 16
const GROUP = 32

/**
 * v0 was ListClientMetricsResources (KIP-714) and knows only client-metrics resources; v1
 * (KIP-1142, Kafka 4.1) lists any of these (Kafka's ListConfigResourcesRequest.supportedResourceTypes).
 */
const SUPPORTED: readonly (readonly number[])[] = [[CLIENT_METRICS], [TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP]]

/**
 * ListConfigResources 0-1 as Kafka 4.4's KafkaApis answers it: the resources of the asked
 * types (all supported ones when none is asked), in Kafka's order: groups that have
 * configs, client-metrics resources, this node as broker logger and as broker, then every
 * topic. A type the version does not know makes the whole answer UNSUPPORTED_VERSION.
 * Client-metrics resources (KIP-714 subscriptions) cannot be created on this broker, so
 * that list is always empty, as on a Kafka without any.
 */
export const listConfigResourcesHandler = defineHandler({
  api: ListConfigResources,
  minVersion: 0,
  maxVersion: 1,
  handle(ctx, req) {
    const supported = SUPPORTED[ctx.version]!
    const asked = req.resourceTypes === undefined || req.resourceTypes.length === 0 ? supported : req.resourceTypes
    if (asked.some((t) => !supported.includes(t))) return { throttleTimeMs: 0, errorCode: ErrorCodes.UNSUPPORTED_VERSION, configResources: [] }
    const out: ListConfigResourcesResponseConfigResource[] = []
    const add = (resourceType: number, names: Iterable<string>) => {
      if (asked.includes(resourceType)) for (const resourceName of names) out.push({ resourceName, resourceType })
    }
    const node = [String(ctx.broker.nodeId)]
    add(GROUP, ctx.broker.topics.dynamic.groupIds())
    add(BROKER_LOGGER, node)
    add(BROKER, node)
    add(TOPIC, [...ctx.broker.topics.all()].map((t) => t.name))
    return { throttleTimeMs: 0, errorCode: ErrorCodes.NONE, configResources: out }
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, configResources: [] }
  },
})
