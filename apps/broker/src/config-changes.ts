import { ErrorCodes } from '@tidelog/protocol'
import type { BrokerContext } from './context.js'
import { type ConfigChangeError, checkBrokerConfigs, isListBrokerConfig } from './dynamic-config.js'
import { KafkaStorageError } from './log/index.js'
import { checkGroupConfigs } from './groups/group-config.js'
import { type AlterConfigRequestMetadata, type ConfigResourceTypeName, checkPolicy, policiesOf } from './policy/policy.js'
import { checkTopicConfigs, normalizeTopicConfigs, topicConfigKind } from './topic-config.js'

/** Kafka's ConfigResource.Type codes. */
export const ResourceType = { TOPIC: 2, BROKER: 4, BROKER_LOGGER: 8, GROUP: 32 } as const

/** Kafka's AlterConfigOp.OpType (KIP-339). */
export const ConfigOp = { SET: 0, DELETE: 1, APPEND: 2, SUBTRACT: 3 } as const
const OP_NAMES = ['SET', 'DELETE', 'APPEND', 'SUBTRACT'] as const

export interface ResourceResult {
  errorCode: number
  errorMessage: string | null
}

/**
 * Computes a resource's complete new set of overrides from its current one, or says why not;
 * `altered` is what the request changed (null: deleted), as Kafka's alter.config.policy sees it.
 */
export type ComputeConfigs = (
  current: Readonly<Record<string, string>>,
  resource: 'topic' | 'broker' | 'group',
) => { configs: Record<string, string>; altered: Record<string, string | null> } | { error: ConfigChangeError }

const fail = (e: ConfigChangeError): ResourceResult => ({ errorCode: ErrorCodes[e.code], errorMessage: e.message })
const OK: ResourceResult = { errorCode: ErrorCodes.NONE, errorMessage: null }

/**
 * Kafka's alter.config.policy, after the change is valid and before anything is applied,
 * validateOnly included (KRaft's ConfigurationControlManager); undefined when allowed.
 */
export function alterConfigPolicyRefusal(broker: BrokerContext, type: ConfigResourceTypeName, name: string, altered: Readonly<Record<string, string | null>>): Promise<ResourceResult | undefined> {
  const metadata: AlterConfigRequestMetadata = { resource: { type, name }, configs: { ...altered } }
  return checkPolicy(policiesOf(broker.config).alterConfig, metadata, broker.logger)
}

/**
 * One resource of an AlterConfigs or IncrementalAlterConfigs request, as Kafka's
 * ConfigAdminManager handles it: the resource is checked (a topic that exists; this
 * node's id or "" for the cluster default), the new overrides computed and validated
 * as a whole, then, unless validateOnly, applied to the live broker at once and
 * acknowledged when durable. Anything refused changes nothing.
 */
export async function alterResource(
  broker: BrokerContext,
  resourceType: number,
  resourceName: string,
  compute: ComputeConfigs,
  validateOnly: boolean,
): Promise<ResourceResult> {
  try {
    if (resourceType === ResourceType.TOPIC) {
      if (resourceName === '') return fail({ code: 'INVALID_REQUEST', message: 'Default topic resources are not allowed.' })
      const topic = broker.topics.get(resourceName)
      if (topic === undefined) return { errorCode: ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: `The topic '${resourceName}' does not exist.` }
      const next = compute(topic.configs, 'topic')
      if ('error' in next) return fail(next.error)
      const bad = checkTopicConfigs(next.configs)
      if (bad !== undefined) return fail({ code: 'INVALID_CONFIG', message: bad })
      const refused = await alterConfigPolicyRefusal(broker, 'TOPIC', resourceName, next.altered)
      if (refused !== undefined) return refused
      if (validateOnly) return OK
      // An offline directory could not record the change: refuse it before the live topic sees it.
      broker.logs.dirState.check()
      await broker.topics.setConfigs(topic, normalizeTopicConfigs(next.configs))
      return OK
    }
    if (resourceType === ResourceType.BROKER) {
      if (resourceName !== '') {
        if (!/^-?\d+$/.test(resourceName)) return fail({ code: 'INVALID_REQUEST', message: `Node id must be an integer, but it is: ${resourceName}` })
        if (Number(resourceName) !== broker.nodeId) {
          return fail({ code: 'INVALID_REQUEST', message: `Unexpected broker id, expected ${broker.nodeId}, but received ${resourceName}` })
        }
      }
      const scope = resourceName === '' ? 'clusterDefault' : 'node'
      const next = compute(broker.topics.dynamic.layers[scope], 'broker')
      if ('error' in next) return fail(next.error)
      const bad = checkBrokerConfigs(next.configs, scope === 'node')
      if (bad !== undefined) return fail(bad)
      const refused = await alterConfigPolicyRefusal(broker, 'BROKER', resourceName, next.altered)
      if (refused !== undefined) return refused
      if (validateOnly) return OK
      broker.logs.dirState.check()
      await broker.topics.setBrokerConfigs(scope, normalizeTopicConfigs(next.configs))
      return OK
    }
    if (resourceType === ResourceType.GROUP) {
      // KIP-848 group configs: any group id, existing or not, as Kafka accepts them.
      if (resourceName === '') return fail({ code: 'INVALID_REQUEST', message: 'Default group resources are not allowed.' })
      const next = compute(broker.topics.dynamic.group(resourceName), 'group')
      if ('error' in next) return fail(next.error)
      const bad = checkGroupConfigs(next.configs)
      if (bad !== undefined) return fail({ code: 'INVALID_CONFIG', message: bad })
      const refused = await alterConfigPolicyRefusal(broker, 'GROUP', resourceName, next.altered)
      if (refused !== undefined) return refused
      if (validateOnly) return OK
      broker.logs.dirState.check()
      await broker.topics.dynamic.replaceGroup(resourceName, next.configs)
      return OK
    }
    if (resourceType === ResourceType.BROKER_LOGGER) {
      // Kafka's answer for a logger it does not have; this broker has no named log4j loggers.
      return fail({ code: 'INVALID_CONFIG', message: `Logger ${resourceName} does not exist!` })
    }
    return fail({ code: 'INVALID_REQUEST', message: `Unknown resource type ${resourceType}` })
  } catch (err) {
    if (err instanceof KafkaStorageError) return { errorCode: ErrorCodes.KAFKA_STORAGE_ERROR, errorMessage: err.message }
    throw err
  }
}

function duplicates(names: readonly string[]): { error: ConfigChangeError } | undefined {
  return new Set(names).size === names.length ? undefined : { error: { code: 'INVALID_REQUEST', message: 'Error due to duplicate config keys' } }
}
const refuse = (code: ConfigChangeError['code'], message: string) => ({ error: { code, message } })

/** AlterConfigs (33): the given configs replace all of the resource's overrides. */
export function replaceAll(configs: readonly { name: string; value: string | null }[]): ComputeConfigs {
  return () => {
    const dup = duplicates(configs.map((c) => c.name))
    if (dup !== undefined) return dup
    // Config names come from the client: no prototype, so "__proto__" is a name like any other.
    const out: Record<string, string> = Object.create(null)
    for (const c of configs) {
      if (c.value === null) return refuse('INVALID_REQUEST', `Null value not supported for : ${c.name}`)
      out[c.name] = c.value
    }
    // The policy sees the configs set, not the ones implicitly removed (KAFKA-14195).
    return { configs: out, altered: { ...out } }
  }
}

const splitList = (v: string): string[] => (v.trim() === '' ? [] : v.split(',').map((x) => x.trim()).filter((x) => x !== ''))

/**
 * IncrementalAlterConfigs (44, KIP-339): SET and DELETE one config each; APPEND and
 * SUBTRACT add or remove elements of a list-typed one, starting from its override or,
 * without one, from Kafka's default (so APPEND compact to a fresh topic gives delete,compact).
 */
export function incremental(ops: readonly { name: string; configOperation: number; value: string | null }[]): ComputeConfigs {
  return (current, resource) => {
    const dup = duplicates(ops.map((o) => o.name))
    if (dup !== undefined) return dup
    const out: Record<string, string> = Object.assign(Object.create(null), current)
    const altered: Record<string, string | null> = Object.create(null)
    for (const o of ops) {
      switch (o.configOperation) {
        case ConfigOp.SET:
          if (o.value === null) return refuse('INVALID_REQUEST', `Null value not supported for : ${o.name}`)
          out[o.name] = altered[o.name] = o.value
          break
        case ConfigOp.DELETE:
          delete out[o.name]
          altered[o.name] = null
          break
        case ConfigOp.APPEND:
        case ConfigOp.SUBTRACT: {
          // Kafka looks up list types among topic and broker configs only: no group config can be appended to.
          if (resource === 'group') return refuse('INVALID_CONFIG', `Can't ${OP_NAMES[o.configOperation]} to key ${o.name} because its type is not LIST.`)
          const kind = topicConfigKind(o.name)
          if (resource === 'topic' && kind === undefined) return refuse('INVALID_CONFIG', `Unknown topic config name: ${o.name}`)
          const list = kind?.list === true || (resource === 'broker' && isListBrokerConfig(o.name))
          if (!list) return refuse('INVALID_CONFIG', `Can't ${OP_NAMES[o.configOperation]} to key ${o.name} because its type is not LIST.`)
          const have = splitList(out[o.name] ?? kind?.defaultValue ?? '')
          const given = splitList(o.value ?? '')
          const next = o.configOperation === ConfigOp.APPEND ? [...have, ...given.filter((x) => !have.includes(x))] : have.filter((x) => !given.includes(x))
          out[o.name] = altered[o.name] = next.join(',')
          break
        }
        default:
          return refuse('INVALID_REQUEST', `Unknown config operation ${o.configOperation} for ${o.name}`)
      }
    }
    return { configs: out, altered }
  }
}
