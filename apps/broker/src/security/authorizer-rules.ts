import { ApiKeys, ErrorCodes } from '@tidelog/protocol'
import type { BrokerContext } from '../context.js'
import type { ApiHandler, RequestContext } from '../handlers/types.js'
import { normalizeAddress } from '../limits.js'
import { AclOperation as Op, CLUSTER_NAME, ResourceType as R, operationName, resourceTypeName } from './acl.js'
import type { Requester, StandardAuthorizer } from './authorizer.js'

// Rules read each API's own request and response shapes, hence `any` at this one boundary.

/** What a rule decides: serve `request` (a subset of what was asked) and patch the answer, or answer `response` without serving. */
export type Verdict = { request: any; finish?: (res: any) => any } | { response: any }

/** What a rule may ask, bound to one request's requester and handler. */
export class Gate {
  constructor(
    readonly authorizer: StandardAuthorizer,
    readonly who: Requester,
    readonly broker: BrokerContext,
    readonly version: number,
    private readonly errorResponse: (req: any, errorCode: number, version: number) => any,
  ) {}

  can(op: number, type: number, name: string): boolean {
    const allowed = this.authorizer.authorize(this.who, op, type, name)
    // Kafka's kafka.authorizer.logger line, so a refusal can be traced to the missing ACL.
    if (!allowed) {
      this.broker.logger.debug(`Principal = ${this.who.principal} is Denied operation = ${operationName(op)} from host = ${this.who.host} on resource = ${resourceTypeName(type)}:${name}`)
    }
    return allowed
  }

  cluster(op: number): boolean {
    return this.can(op, R.CLUSTER, CLUSTER_NAME)
  }

  /** The handler's own error answer for the whole request. */
  deny(req: any, errorCode: number): { response: any } {
    return { response: this.errorResponse(req, errorCode, this.version) }
  }

  /** Authorized operations as KIP-430 asks: the bit set, or Kafka's "not requested" value. */
  operations(asked: boolean | undefined, type: number, name: string): number {
    return asked === true ? this.authorizer.authorizedOperations(this.who, type, name) : -2147483648
  }

  /**
   * Serves the items of `req[list]` that `check` lets through; the others are answered with the
   * error `check` returns, as the handler's own errorResponse shapes it, appended to `res[out]`.
   */
  split(req: any, list: string, out: string, check: (item: any) => number | undefined): Verdict {
    const allowed: any[] = []
    const denied = new Map<number, any[]>()
    for (const item of req[list] ?? []) {
      const code = check(item)
      if (code === undefined) allowed.push(item)
      else denied.set(code, [...(denied.get(code) ?? []), item])
    }
    if (denied.size === 0) return { request: req }
    return {
      request: { ...req, [list]: allowed },
      finish: (res) => {
        const extra = [...denied].flatMap(([code, items]) => this.errorResponse({ ...req, [list]: items }, code, this.version)[out] as any[])
        return { ...res, [out]: [...(res[out] ?? []), ...extra] }
      },
    }
  }

  /** Drops what the requester may not see from `res[out]` (Kafka filters listings, it does not refuse them). */
  static filter(out: string, keep: (item: any) => boolean): (res: any) => any {
    return (res) => ({ ...res, [out]: (res[out] as any[]).filter(keep) })
  }

  topicName(t: { name?: string | null; topic?: string | null; topicId?: string }): string | undefined {
    const name = t.name ?? t.topic
    if (name !== null && name !== undefined && name !== '') return name
    return t.topicId === undefined ? undefined : this.broker.topics.getById(t.topicId)?.name
  }

  /** TOPIC_AUTHORIZATION_FAILED unless `op` is allowed on the topic; an unknown topic id is left to the handler (UNKNOWN_TOPIC_ID). */
  topic(op: number): (t: any) => number | undefined {
    return (t) => {
      const name = this.topicName(t)
      return name === undefined || this.can(op, R.TOPIC, name) ? undefined : ErrorCodes.TOPIC_AUTHORIZATION_FAILED
    }
  }
}

const pass = (req: any): Verdict => ({ request: req })

// Batch attributes bit 4 (Kafka's RecordBatch.isTransactional), at offset 21 of a v2 batch.
const hasTransactionalRecords = (req: any): boolean =>
  (req.topicData as any[]).some((t) => (t.partitionData as any[]).some((p) => p.records != null && p.records.length > 22 && (p.records[22] & 0x10) !== 0))

const txnId = (g: Gate, id: string | null | undefined): boolean => id != null && g.can(Op.WRITE, R.TRANSACTIONAL_ID, id)

// DescribeConfigs / AlterConfigs resource types (ConfigResource.Type) to the ACL resource and error they need.
function configResource(r: { resourceType: number; resourceName: string }): [number, string, number] {
  if (r.resourceType === 2) return [R.TOPIC, r.resourceName, ErrorCodes.TOPIC_AUTHORIZATION_FAILED]
  if (r.resourceType === 32) return [R.GROUP, r.resourceName, ErrorCodes.GROUP_AUTHORIZATION_FAILED]
  return [R.CLUSTER, CLUSTER_NAME, ErrorCodes.CLUSTER_AUTHORIZATION_FAILED]
}
const configs = (op: number, out: string) => (g: Gate, req: any) =>
  g.split(req, 'resources', out, (r) => {
    const [type, name, code] = configResource(r)
    return g.can(op, type, name) ? undefined : code
  })

const groupOnly = (op: number) => (g: Gate, req: any) => (g.can(op, R.GROUP, req.groupId) ? pass(req) : g.deny(req, ErrorCodes.GROUP_AUTHORIZATION_FAILED))
const clusterOnly = (op: number) => (g: Gate, req: any) => (g.cluster(op) ? pass(req) : g.deny(req, ErrorCodes.CLUSTER_AUTHORIZATION_FAILED))
const txnOnly = (g: Gate, req: any): Verdict => (txnId(g, req.transactionalId) ? pass(req) : g.deny(req, ErrorCodes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))

function offsetFetch(g: Gate, req: any): Verdict {
  const describeTopics = g.topic(Op.DESCRIBE)
  if (g.version < 8) {
    if (!g.can(Op.DESCRIBE, R.GROUP, req.groupId)) return g.deny(req, ErrorCodes.GROUP_AUTHORIZATION_FAILED)
    if (req.topics == null) return { request: req, finish: Gate.filter('topics', (t) => describeTopics(t) === undefined) }
    return g.split(req, 'topics', 'topics', describeTopics)
  }
  // v8+ (KIP-709): groups are checked one by one, and the topics of each.
  const deniedGroups = (req.groups as any[]).filter((grp) => !g.can(Op.DESCRIBE, R.GROUP, grp.groupId))
  const deniedTopics = new Map<string, any[]>()
  const groups = (req.groups as any[])
    .filter((grp) => !deniedGroups.includes(grp))
    .map((grp) => {
      if (grp.topics == null) return grp
      deniedTopics.set(grp.groupId, (grp.topics as any[]).filter((t) => describeTopics(t) !== undefined))
      return { ...grp, topics: (grp.topics as any[]).filter((t) => describeTopics(t) === undefined) }
    })
  const refused = (t: any) => ({
    name: t.name,
    partitions: (t.partitionIndexes as number[]).map((partitionIndex) => ({ partitionIndex, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: ErrorCodes.TOPIC_AUTHORIZATION_FAILED })),
  })
  return {
    request: { ...req, groups },
    finish: (res) => ({
      ...res,
      groups: [
        ...(res.groups as any[]).map((grp) => {
          const denied = deniedTopics.get(grp.groupId)
          if (denied === undefined) return { ...grp, topics: (grp.topics as any[]).filter((t) => describeTopics(t) === undefined) }
          return { ...grp, topics: [...grp.topics, ...denied.map(refused)] }
        }),
        ...g.deny({ ...req, groups: deniedGroups }, ErrorCodes.GROUP_AUTHORIZATION_FAILED).response.groups,
      ],
    }),
  }
}

function metadata(g: Gate, req: any): Verdict {
  const withOps = (res: any) => ({
    ...res,
    clusterAuthorizedOperations: g.operations(req.includeClusterAuthorizedOperations, R.CLUSTER, CLUSTER_NAME),
    topics: (res.topics as any[]).map((t) => (t.errorCode === ErrorCodes.NONE ? { ...t, topicAuthorizedOperations: g.operations(req.includeTopicAuthorizedOperations, R.TOPIC, t.name) } : t)),
  })
  const describe = g.topic(Op.DESCRIBE)
  if (req.topics === null || (g.version === 0 && req.topics.length === 0)) {
    return { request: req, finish: (res) => withOps(Gate.filter('topics', (t) => describe(t) === undefined)(res)) }
  }
  const autoCreate = (g.version < 4 || req.allowAutoTopicCreation !== false) && g.broker.config.autoCreateTopics
  const mayCreate = g.cluster(Op.CREATE)
  const verdict = g.split(req, 'topics', 'topics', (t) => {
    const denied = describe(t)
    if (denied !== undefined || t.name == null || !autoCreate || mayCreate || g.broker.topics.get(t.name) !== undefined) return denied
    return g.can(Op.CREATE, R.TOPIC, t.name) ? undefined : ErrorCodes.TOPIC_AUTHORIZATION_FAILED
  })
  if ('response' in verdict) return verdict
  const allowed = new Set((verdict.request.topics as any[]).map((t) => t.name ?? t.topicId))
  // v0 reads an empty list as "every topic": keep only what was asked for and allowed.
  const finish = verdict.finish ?? ((res: any) => res)
  return { request: verdict.request, finish: (res) => withOps(finish(g.version === 0 ? Gate.filter('topics', (t) => allowed.has(t.name))(res) : res)) }
}

function addPartitionsToTxn(g: Gate, req: any): Verdict {
  // v4+ is the broker-to-broker verification of KIP-890 part 1.
  if (g.version >= 4) return clusterOnly(Op.CLUSTER_ACTION)(g, req)
  if (!txnId(g, req.v3AndBelowTransactionalId)) return g.deny(req, ErrorCodes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
  const write = g.topic(Op.WRITE)
  if ((req.v3AndBelowTopics as any[]).every((t) => write(t) === undefined)) return pass(req)
  // Kafka adds none of them then: the refused topics say why, the others OPERATION_NOT_ATTEMPTED.
  const res = g.deny(req, ErrorCodes.OPERATION_NOT_ATTEMPTED).response
  const refused = new Set((req.v3AndBelowTopics as any[]).filter((t) => write(t) !== undefined).map((t) => t.name))
  for (const t of res.resultsByTopicV3AndBelow) {
    if (refused.has(t.name)) for (const p of t.resultsByPartition) p.partitionErrorCode = ErrorCodes.TOPIC_AUTHORIZATION_FAILED
  }
  return { response: res }
}

/**
 * Every API's authorization, as Kafka's KafkaApis checks it: the operation on each resource,
 * what a refusal answers, and what listings hide. `null` marks the APIs Kafka serves before or
 * without authorization (ApiVersions, SASL). The registry refuses a handler missing from here.
 */
export const RULES: Record<number, ((g: Gate, req: any) => Verdict) | null> = {
  [ApiKeys.ApiVersions]: null,
  [ApiKeys.SaslHandshake]: null,
  [ApiKeys.SaslAuthenticate]: null,
  [ApiKeys.Produce]: (g, req) => {
    if (hasTransactionalRecords(req) && !txnId(g, req.transactionalId)) return g.deny(req, ErrorCodes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    return g.split(req, 'topicData', 'responses', g.topic(Op.WRITE))
  },
  [ApiKeys.Fetch]: (g, req) => {
    const replica = g.version >= 15 ? (req.replicaState?.replicaId ?? -1) : (req.replicaId ?? -1)
    if (replica >= 0) return clusterOnly(Op.CLUSTER_ACTION)(g, req)
    return g.split(req, 'topics', 'responses', g.topic(Op.READ))
  },
  [ApiKeys.ListOffsets]: (g, req) => g.split(req, 'topics', 'topics', g.topic(Op.DESCRIBE)),
  [ApiKeys.Metadata]: metadata,
  [ApiKeys.OffsetCommit]: (g, req) => (g.can(Op.READ, R.GROUP, req.groupId) ? g.split(req, 'topics', 'topics', g.topic(Op.READ)) : g.deny(req, ErrorCodes.GROUP_AUTHORIZATION_FAILED)),
  [ApiKeys.OffsetFetch]: offsetFetch,
  [ApiKeys.FindCoordinator]: (g, req) => {
    const [type, code] = (req.keyType ?? 0) === 1 ? [R.TRANSACTIONAL_ID, ErrorCodes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED] : [R.GROUP, ErrorCodes.GROUP_AUTHORIZATION_FAILED]
    if (g.version >= 4) return g.split(req, 'coordinatorKeys', 'coordinators', (key: string) => (g.can(Op.DESCRIBE, type, key) ? undefined : code))
    return g.can(Op.DESCRIBE, type, req.key) ? pass(req) : g.deny(req, code)
  },
  [ApiKeys.JoinGroup]: groupOnly(Op.READ),
  [ApiKeys.Heartbeat]: groupOnly(Op.READ),
  [ApiKeys.LeaveGroup]: groupOnly(Op.READ),
  [ApiKeys.SyncGroup]: groupOnly(Op.READ),
  [ApiKeys.DescribeGroups]: (g, req) => {
    const v = g.split(req, 'groups', 'groups', (id: string) => (g.can(Op.DESCRIBE, R.GROUP, id) ? undefined : ErrorCodes.GROUP_AUTHORIZATION_FAILED))
    if ('response' in v) return v
    const withOps = (res: any) => ({
      ...res,
      groups: (res.groups as any[]).map((grp) => (grp.errorCode === ErrorCodes.NONE ? { ...grp, authorizedOperations: g.operations(req.includeAuthorizedOperations, R.GROUP, grp.groupId) } : grp)),
    })
    return { request: v.request, finish: (res) => withOps(v.finish?.(res) ?? res) }
  },
  // DESCRIBE on the cluster lists every group; otherwise the groups one may describe.
  [ApiKeys.ListGroups]: (g, req) => (g.cluster(Op.DESCRIBE) ? pass(req) : { request: req, finish: Gate.filter('groups', (grp) => g.can(Op.DESCRIBE, R.GROUP, grp.groupId)) }),
  [ApiKeys.CreateTopics]: (g, req) => {
    const v = g.cluster(Op.CREATE) ? pass(req) : g.split(req, 'topics', 'topics', (t) => (g.can(Op.CREATE, R.TOPIC, t.name) ? undefined : ErrorCodes.TOPIC_AUTHORIZATION_FAILED))
    if ('response' in v || g.version < 5) return v
    // v5+ answers with the topic's configs only to those who may DESCRIBE_CONFIGS it (ReplicationControlManager).
    const hideConfigs = (t: any) =>
      t.errorCode !== ErrorCodes.NONE || g.can(Op.DESCRIBE_CONFIGS, R.TOPIC, t.name) ? t : { ...t, configs: null, topicConfigErrorCode: ErrorCodes.TOPIC_AUTHORIZATION_FAILED }
    return { request: v.request, finish: (res) => { const r = v.finish?.(res) ?? res; return { ...r, topics: (r.topics as any[]).map(hideConfigs) } } }
  },
  [ApiKeys.DeleteTopics]: (g, req) => (g.version >= 6 ? g.split(req, 'topics', 'responses', g.topic(Op.DELETE)) : g.split(req, 'topicNames', 'responses', (name: string) => g.topic(Op.DELETE)({ name }))),
  [ApiKeys.DeleteRecords]: (g, req) => g.split(req, 'topics', 'topics', g.topic(Op.DELETE)),
  [ApiKeys.InitProducerId]: (g, req) => {
    if (req.transactionalId != null) return txnOnly(g, req)
    // KIP-679: WRITE on any topic is enough for an idempotent producer.
    if (g.cluster(Op.IDEMPOTENT_WRITE) || g.authorizer.authorizeByResourceType(g.who, Op.WRITE, R.TOPIC)) return pass(req)
    return g.deny(req, ErrorCodes.CLUSTER_AUTHORIZATION_FAILED)
  },
  [ApiKeys.OffsetForLeaderEpoch]: (g, req) => ((req.replicaId ?? -1) >= 0 ? clusterOnly(Op.CLUSTER_ACTION)(g, req) : g.split(req, 'topics', 'topics', g.topic(Op.DESCRIBE))),
  [ApiKeys.AddPartitionsToTxn]: addPartitionsToTxn,
  [ApiKeys.AddOffsetsToTxn]: (g, req) => {
    if (!txnId(g, req.transactionalId)) return g.deny(req, ErrorCodes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    return g.can(Op.READ, R.GROUP, req.groupId) ? pass(req) : g.deny(req, ErrorCodes.GROUP_AUTHORIZATION_FAILED)
  },
  [ApiKeys.EndTxn]: txnOnly,
  [ApiKeys.WriteTxnMarkers]: clusterOnly(Op.CLUSTER_ACTION),
  [ApiKeys.TxnOffsetCommit]: (g, req) => {
    if (!txnId(g, req.transactionalId)) return g.deny(req, ErrorCodes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if (!g.can(Op.READ, R.GROUP, req.groupId)) return g.deny(req, ErrorCodes.GROUP_AUTHORIZATION_FAILED)
    return g.split(req, 'topics', 'topics', g.topic(Op.READ))
  },
  [ApiKeys.DescribeConfigs]: configs(Op.DESCRIBE_CONFIGS, 'results'),
  [ApiKeys.AlterConfigs]: configs(Op.ALTER_CONFIGS, 'responses'),
  [ApiKeys.IncrementalAlterConfigs]: configs(Op.ALTER_CONFIGS, 'responses'),
  [ApiKeys.DescribeLogDirs]: clusterOnly(Op.DESCRIBE),
  [ApiKeys.CreatePartitions]: (g, req) => g.split(req, 'topics', 'results', g.topic(Op.ALTER)),
  [ApiKeys.DeleteGroups]: (g, req) => g.split(req, 'groupsNames', 'results', (id: string) => (g.can(Op.DELETE, R.GROUP, id) ? undefined : ErrorCodes.GROUP_AUTHORIZATION_FAILED)),
  [ApiKeys.OffsetDelete]: (g, req) => {
    if (!g.can(Op.DELETE, R.GROUP, req.groupId)) return g.deny(req, ErrorCodes.GROUP_AUTHORIZATION_FAILED)
    const read = g.topic(Op.READ)
    const refused = (req.topics as any[]).filter((t) => read(t) !== undefined)
    if (refused.length === 0) return pass(req)
    const entries = refused.map((t) => ({ name: t.name, partitions: (t.partitions as any[]).map((p) => ({ partitionIndex: p.partitionIndex, errorCode: ErrorCodes.TOPIC_AUTHORIZATION_FAILED })) }))
    return { request: { ...req, topics: (req.topics as any[]).filter((t) => !refused.includes(t)) }, finish: (res) => ({ ...res, topics: [...res.topics, ...entries] }) }
  },
  [ApiKeys.DescribeUserScramCredentials]: clusterOnly(Op.DESCRIBE),
  [ApiKeys.AlterUserScramCredentials]: clusterOnly(Op.ALTER),
  [ApiKeys.DescribeCluster]: (g, req) => ({ request: req, finish: (res) => ({ ...res, clusterAuthorizedOperations: g.operations(req.includeClusterAuthorizedOperations, R.CLUSTER, CLUSTER_NAME) }) }),
  [ApiKeys.DescribeProducers]: (g, req) => g.split(req, 'topics', 'topics', g.topic(Op.READ)),
  [ApiKeys.DescribeTransactions]: (g, req) => {
    const v = g.split(req, 'transactionalIds', 'transactionStates', (id: string) => (g.can(Op.DESCRIBE, R.TRANSACTIONAL_ID, id) ? undefined : ErrorCodes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    if ('response' in v) return v
    // Kafka leaves out the partitions of topics the requester may not describe.
    const describe = g.topic(Op.DESCRIBE)
    const hide = (res: any) => ({ ...res, transactionStates: (res.transactionStates as any[]).map((s) => ({ ...s, topics: (s.topics as any[]).filter((t) => describe(t) === undefined) })) })
    return { request: v.request, finish: (res) => hide(v.finish?.(res) ?? res) }
  },
  [ApiKeys.ListTransactions]: (g, req) => ({ request: req, finish: Gate.filter('transactionStates', (s) => g.can(Op.DESCRIBE, R.TRANSACTIONAL_ID, s.transactionalId)) }),
  // KIP-932 share groups, as KafkaApis checks them: READ on the group, then DESCRIBE (heartbeat) or READ (fetch, acknowledge) on each topic.
  [ApiKeys.ShareGroupHeartbeat]: (g, req) => {
    if (!g.can(Op.READ, R.GROUP, req.groupId)) return g.deny(req, ErrorCodes.GROUP_AUTHORIZATION_FAILED)
    const describe = g.topic(Op.DESCRIBE)
    return ((req.subscribedTopicNames ?? []) as string[]).every((name) => describe({ name }) === undefined) ? pass(req) : g.deny(req, ErrorCodes.TOPIC_AUTHORIZATION_FAILED)
  },
  [ApiKeys.ShareGroupDescribe]: (g, req) => g.split(req, 'groupIds', 'groups', (id: string) => (g.can(Op.DESCRIBE, R.GROUP, id) ? undefined : ErrorCodes.GROUP_AUTHORIZATION_FAILED)),
  [ApiKeys.ShareFetch]: (g, req) => (g.can(Op.READ, R.GROUP, req.groupId ?? '') ? g.split(req, 'topics', 'responses', g.topic(Op.READ)) : g.deny(req, ErrorCodes.GROUP_AUTHORIZATION_FAILED)),
  [ApiKeys.ShareAcknowledge]: (g, req) => (g.can(Op.READ, R.GROUP, req.groupId ?? '') ? g.split(req, 'topics', 'responses', g.topic(Op.READ)) : g.deny(req, ErrorCodes.GROUP_AUTHORIZATION_FAILED)),
  // KIP-455: Kafka's ControllerApis checks CLUSTER ALTER / DESCRIBE before anything else.
  [ApiKeys.AlterPartitionReassignments]: clusterOnly(Op.ALTER),
  [ApiKeys.ListPartitionReassignments]: clusterOnly(Op.DESCRIBE),
  [ApiKeys.DescribeClientQuotas]: clusterOnly(Op.DESCRIBE_CONFIGS),
  // KIP-1142: KafkaApis asks DESCRIBE_CONFIGS on the cluster, and filters nothing after it.
  [ApiKeys.ListConfigResources]: clusterOnly(Op.DESCRIBE_CONFIGS),
  [ApiKeys.AlterClientQuotas]: clusterOnly(Op.ALTER_CONFIGS),
  [ApiKeys.DescribeAcls]: clusterOnly(Op.DESCRIBE),
  [ApiKeys.CreateAcls]: clusterOnly(Op.ALTER),
  [ApiKeys.DeleteAcls]: clusterOnly(Op.ALTER),
}

/** The connection's principal and address, as Kafka's RequestContext gives them to the authorizer. */
export function requester(ctx: RequestContext): Requester {
  const at = ctx.peer.lastIndexOf(':')
  return { principal: ctx.security?.principal ?? 'User:ANONYMOUS', host: normalizeAddress(at < 0 ? ctx.peer : ctx.peer.slice(0, at)) }
}

/**
 * The handler behind its API's rule: the rule sees the request first, the handler serves what
 * the rule lets through, and the rule patches the answer (refusals added, listings filtered).
 */
export function withAuthorization(h: ApiHandler, authorizer: StandardAuthorizer): ApiHandler {
  const rule = RULES[h.api.apiKey]
  if (rule === undefined) throw new Error(`${h.api.name} has no authorization rule in RULES`)
  if (rule === null) return h
  const noResponse = (ctx: RequestContext): undefined => {
    // acks=0 has no answer to carry the refusal: Kafka closes the connection.
    ctx.closeConnection(`${h.api.name} refused (not authorized) and has no response to say so`)
    return undefined
  }
  return {
    ...h,
    handle(ctx, req) {
      const verdict = rule(new Gate(authorizer, requester(ctx), ctx.broker, ctx.version, h.errorResponse), req)
      const acks0 = h.api.apiKey === ApiKeys.Produce && (req as { acks: number }).acks === 0
      if ('response' in verdict) return acks0 ? noResponse(ctx) : verdict.response
      const { finish } = verdict
      const result = h.handle(ctx, verdict.request)
      if (finish === undefined) return result
      const done = (res: unknown) => (res === undefined ? (acks0 ? noResponse(ctx) : undefined) : finish(res))
      return result instanceof Promise ? result.then(done) : done(result)
    },
  }
}
