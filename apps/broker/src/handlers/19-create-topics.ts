import { CreateTopics, ErrorCodes, type CreateTopicsResponseCreatableTopicResult } from '@tidelog/protocol'
import { alterConfigPolicyRefusal } from '../config-changes.js'
import { KafkaStorageError } from '../log/index.js'
import { checkPolicy, policiesOf } from '../policy/policy.js'
import { checkTopicConfigs, describeTopicConfigs, normalizeTopicConfigs } from '../topic-config.js'
import { TOO_MANY_PARTITIONS_PER_REQUEST, invalidTopicName } from '../topics.js'
import { defineHandler } from './types.js'

/**
 * An upper bound of what a request asks for, counted as KRaft does before any
 * other check (a bad count adds nothing), so one request cannot make the broker
 * allocate without bound.
 */
function requestedPartitions(topics: readonly { numPartitions: number; assignments: readonly unknown[] }[], numPartitions: number): number {
  let total = 0
  for (const t of topics) {
    if (t.assignments.length > 0) total += t.assignments.length
    else if (t.numPartitions === -1) total += numPartitions
    else if (t.numPartitions > 0) total += t.numPartitions
  }
  return total
}

/**
 * CreateTopics 2-7: name, partition count, replication factor (1, the only
 * replica there is), manual assignments naming this broker, and topic configs
 * checked as Kafka 4.4 checks them (topic-config.ts; INVALID_CONFIG with Kafka's
 * message otherwise). validate_only checks without creating. Kafka's policies run as in
 * KRaft's ReplicationControlManager: alter.config.policy on the configs given (creating a
 * topic with configs is a config change there), then create.topic.policy, validate_only too.
 */
export const createTopicsHandler = defineHandler({
  api: CreateTopics,
  minVersion: 2,
  maxVersion: 7,
  async handle(ctx, req) {
    const broker = ctx.broker
    const createPolicy = policiesOf(broker.config).createTopic
    const v = ctx.version
    if (requestedPartitions(req.topics, broker.config.numPartitions) > broker.config.maxPartitionsPerRequest) {
      const topics = req.topics.map((t) => ({ name: t.name, errorCode: ErrorCodes.POLICY_VIOLATION, errorMessage: TOO_MANY_PARTITIONS_PER_REQUEST }))
      return { throttleTimeMs: 0, topics }
    }
    // Hosted before this request, plus what its earlier topics were granted (created or, with validate_only, not).
    let counted = broker.topics.partitionCount
    const counts = new Map<string, number>()
    for (const t of req.topics) counts.set(t.name, (counts.get(t.name) ?? 0) + 1)
    // One topic at a time: a policy may answer asynchronously, and each topic counts against the next one's budget.
    const topics: CreateTopicsResponseCreatableTopicResult[] = []
    for (const t of req.topics) topics.push(await createOne(t))
    async function createOne(t: (typeof req.topics)[number]): Promise<CreateTopicsResponseCreatableTopicResult> {
      const fail = (errorCode: number, errorMessage: string) => ({ name: t.name, errorCode, errorMessage })
      if (counts.get(t.name)! > 1) return fail(ErrorCodes.INVALID_REQUEST, `topic ${t.name} appears more than once in the request`)
      const bad = invalidTopicName(t.name)
      if (bad !== undefined) return fail(ErrorCodes.INVALID_TOPIC_EXCEPTION, bad)
      if (broker.topics.get(t.name) !== undefined) return fail(ErrorCodes.TOPIC_ALREADY_EXISTS, `topic ${t.name} already exists`)
      let partitions = t.numPartitions
      if (t.assignments.length > 0) {
        if (t.numPartitions !== -1 || t.replicationFactor !== -1) {
          return fail(ErrorCodes.INVALID_REQUEST, 'both manual assignments and a partition count or replication factor were given')
        }
        const indexes = t.assignments.map((a) => a.partitionIndex).sort((a, b) => a - b)
        if (indexes.some((p, i) => p !== i)) return fail(ErrorCodes.INVALID_REPLICA_ASSIGNMENT, 'partitions must be numbered 0, 1, 2, ...')
        if (t.assignments.some((a) => a.brokerIds.length !== 1 || a.brokerIds[0] !== broker.nodeId)) {
          return fail(ErrorCodes.INVALID_REPLICA_ASSIGNMENT, `every partition must be assigned to broker ${broker.nodeId} alone`)
        }
        partitions = t.assignments.length
      } else {
        // Kafka's own messages (ReplicationControlManager), which tools print as is.
        if (t.replicationFactor === 0 || t.replicationFactor < -1) {
          return fail(ErrorCodes.INVALID_REPLICATION_FACTOR, 'Replication factor must be larger than 0, or -1 to use the default value.')
        }
        if (partitions === 0 || partitions < -1) return fail(ErrorCodes.INVALID_PARTITIONS, 'Number of partitions was set to an invalid non-positive value.')
        if (partitions === -1) partitions = broker.config.numPartitions
        if (t.replicationFactor > 1) {
          return fail(ErrorCodes.INVALID_REPLICATION_FACTOR, `replication factor ${t.replicationFactor} is larger than the number of brokers (1)`)
        }
      }
      const asked: Record<string, string | null> = Object.create(null)
      for (const c of t.configs) asked[c.name] = c.value
      const configError = checkTopicConfigs(asked)
      if (configError !== undefined) return fail(ErrorCodes.INVALID_CONFIG, configError)
      const refusal =
        (t.configs.length > 0 ? await alterConfigPolicyRefusal(broker, 'TOPIC', t.name, asked) : undefined) ??
        (await checkPolicy(
          createPolicy,
          {
            topic: t.name,
            numPartitions: t.assignments.length > 0 ? null : partitions,
            replicationFactor: t.assignments.length > 0 ? null : 1,
            replicasAssignments: t.assignments.length > 0 ? new Map(t.assignments.map((a) => [a.partitionIndex, [...a.brokerIds]])) : null,
            // checkTopicConfigs refused null values.
            configs: { ...(asked as Record<string, string>) },
          },
          broker.logger,
        ))
      if (refusal !== undefined) return { name: t.name, ...refusal }
      // The policy may have taken its time: another request may have created the topic meanwhile.
      if (broker.topics.get(t.name) !== undefined) return fail(ErrorCodes.TOPIC_ALREADY_EXISTS, `topic ${t.name} already exists`)
      const overBudget = broker.topics.partitionBudgetError(partitions, counted)
      if (overBudget !== undefined) return fail(ErrorCodes.POLICY_VIOLATION, overBudget)
      // KIP-599, last of the checks as in ReplicationControlManager.createTopic (validate_only too).
      const throttled = ctx.mutations?.charge(partitions)
      if (throttled !== undefined) return fail(throttled.errorCode, throttled.errorMessage)
      counted += partitions
      // checkTopicConfigs refused null values.
      const configs = normalizeTopicConfigs(asked as Record<string, string>)
      let topic
      try {
        topic = req.validateOnly === true ? undefined : broker.topics.create(t.name, partitions, configs)
      } catch (err) {
        if (err instanceof KafkaStorageError) return fail(err.code, err.message)
        throw err
      }
      const result: CreateTopicsResponseCreatableTopicResult = { name: t.name, errorCode: ErrorCodes.NONE, errorMessage: null }
      if (v >= 5) {
        result.numPartitions = partitions
        result.replicationFactor = 1
        // As Kafka: the created topic's configs, validate_only or not.
        result.configs = describeTopicConfigs(configs, broker.config, broker.topics.dynamic.layers).map((c) => ({
          name: c.name,
          value: c.value,
          readOnly: false,
          configSource: c.source,
          isSensitive: false,
        }))
      }
      if (v >= 7 && topic !== undefined) result.topicId = topic.topicId
      return result
    }
    // Acknowledged once topics.json records them (written off the event loop, coalesced).
    return broker.topics.persisted().then(
      () => ({ throttleTimeMs: 0, topics }),
      () => ({ throttleTimeMs: 0, topics: topics.map((r) => (r.errorCode === ErrorCodes.NONE ? { ...r, errorCode: ErrorCodes.KAFKA_STORAGE_ERROR } : r)) }),
    )
  },
  errorResponse(req, errorCode) {
    return { throttleTimeMs: 0, topics: req.topics.map((t) => ({ name: t.name, errorCode, errorMessage: null })) }
  },
})
