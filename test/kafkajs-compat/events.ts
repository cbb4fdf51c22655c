import { retrying, until, type KafkaModule } from './types.js'

type Event = { id: unknown; type: string; timestamp: number; payload: any }
type Emitter = { on(name: string, listener: (e: Event) => void): () => void; events: Record<string, string> }

/** A payload's shape: each key with its JavaScript type (null, array and object told apart). */
function shape(v: unknown): unknown {
  if (v === null) return 'null'
  if (Array.isArray(v)) return v.length === 0 ? [] : [shape(v[0])]
  if (v instanceof Error) return 'Error'
  if (typeof v === 'object') return Object.fromEntries(Object.keys(v as object).sort().map((k) => [k, shape((v as Record<string, unknown>)[k])]))
  return typeof v
}

/** Every event of one client, in order, with its payload as emitted. */
function record(client: Emitter, names: readonly string[]): Event[] {
  const out: Event[] = []
  for (const n of names) client.on(client.events[n]!, (e) => out.push({ ...e, type: n }))
  return out
}

// The requests every run makes on a healthy single broker, by the name kafkajs gives them.
const EXPECTED_REQUESTS = {
  admin: ['ApiVersions', 'Metadata', 'CreateTopics', 'DeleteTopics'],
  producer: ['ApiVersions', 'Metadata', 'Produce'],
  consumer: ['ApiVersions', 'Metadata', 'GroupCoordinator', 'JoinGroup', 'SyncGroup', 'OffsetFetch', 'ListOffsets', 'Fetch', 'Heartbeat', 'OffsetCommit', 'LeaveGroup'],
}

/**
 * What a listener can rely on for REQUEST events: the fields, that times are consistent and
 * which requests were seen (each name always with the same API key).
 */
function requests(events: Event[], brokers: string[], which: keyof typeof EXPECTED_REQUESTS) {
  const reqs = events.filter((e) => e.type === 'REQUEST')
  const keys = new Map<string, Set<number>>()
  for (const r of reqs) keys.set(r.payload.apiName, (keys.get(r.payload.apiName) ?? new Set()).add(r.payload.apiKey))
  const sane = reqs.every(({ payload: p, timestamp }) =>
    p.clientId === 'my-app' && brokers.includes(p.broker) && p.createdAt <= p.sentAt && p.sentAt <= timestamp && p.pendingDuration >= 0 && p.duration >= 0 && p.size > 0 && Number.isInteger(p.correlationId) && Number.isInteger(p.apiVersion),
  )
  return {
    shape: shape(reqs[0]?.payload),
    sane,
    seen: EXPECTED_REQUESTS[which].filter((n) => keys.has(n)),
    oneKeyPerName: [...keys.values()].every((s) => s.size === 1),
  }
}

/** Shapes of each kind's payloads (all of one kind must have the same); topic names as keys lose the run's prefix. */
function shapes(events: Event[], prefix: string): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const e of events) {
    const s = JSON.stringify(shape(e.payload)).replaceAll(`"${prefix}-`, '"')
    if (out[e.type] === undefined) out[e.type] = s
    else if (out[e.type] !== s) out[e.type] = `${String(out[e.type])} | ${s}`
  }
  return out
}

/**
 * "Instrumentation": the events of kafkajs' admin, producer and consumer (kafka.js.org's
 * Instrumentation page), with their payloads' fields and types, what their times say, and the
 * order of the ones a run determines; timing-driven kinds (FETCH, HEARTBEAT) by presence.
 */
export async function eventsProgram(lib: KafkaModule, brokers: string[], prefix: string) {
  const { Kafka, logLevel } = lib
  const kafka = new Kafka({ clientId: 'my-app', brokers, logLevel: logLevel.NOTHING })
  const topic = `${prefix}-instrumented`
  const admin = kafka.admin()
  const adminEvents = record(admin as unknown as Emitter, ['CONNECT', 'DISCONNECT', 'REQUEST', 'REQUEST_TIMEOUT'])
  await admin.connect()
  await retrying(() => admin.createTopics({ topics: [{ topic, numPartitions: 2 }] }))
  // The offsets topic exists before the consumer's first coordinator lookup (see consumer.ts).
  const groupId = `${prefix}-instrumented-group`
  await retrying(() => admin.fetchOffsets({ groupId, topics: [topic] }))

  const producer = kafka.producer()
  const producerEvents = record(producer as unknown as Emitter, ['CONNECT', 'DISCONNECT', 'REQUEST', 'REQUEST_TIMEOUT'])
  await producer.connect()
  await producer.send({ topic, messages: Array.from({ length: 20 }, (_, i) => ({ key: `k${i}`, value: `v${i}` })) })
  await producer.disconnect()

  const consumer = kafka.consumer({ groupId, heartbeatInterval: 100, maxWaitTimeInMs: 100 })
  const names = ['CONNECT', 'GROUP_JOIN', 'FETCH_START', 'FETCH', 'START_BATCH_PROCESS', 'END_BATCH_PROCESS', 'COMMIT_OFFSETS', 'HEARTBEAT', 'REBALANCING', 'CRASH', 'STOP', 'DISCONNECT', 'REQUEST', 'REQUEST_TIMEOUT'] as const
  const consumerEvents = record(consumer as unknown as Emitter, names)
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  let records = 0
  await consumer.run({ eachBatch: async ({ batch }) => void (records += batch.messages.length) })
  await until(() => records >= 20 && consumerEvents.some((e) => e.type === 'HEARTBEAT') && consumerEvents.filter((e) => e.type === 'FETCH').length >= 2, 'all records, a heartbeat and two fetches')
  await consumer.disconnect()
  await admin.deleteTopics({ topics: [topic] })
  await admin.disconnect()

  const kinds = consumerEvents.map((e) => e.type)
  const deterministic = kinds.filter((k) => ['CONNECT', 'GROUP_JOIN', 'START_BATCH_PROCESS', 'END_BATCH_PROCESS', 'COMMIT_OFFSETS', 'STOP', 'DISCONNECT'].includes(k))
  const batch = consumerEvents.find((e) => e.type === 'END_BATCH_PROCESS')!.payload
  const join = consumerEvents.find((e) => e.type === 'GROUP_JOIN')!.payload
  const heartbeat = consumerEvents.find((e) => e.type === 'HEARTBEAT')!.payload
  // Each FETCH closes a FETCH_START emitted before it (one broker: they alternate).
  let open = 0
  let unmatched = 0
  for (const k of kinds) {
    if (k === 'FETCH_START') open++
    else if (k === 'FETCH') open > 0 ? open-- : unmatched++
  }
  return {
    envelope: shape({ ...consumerEvents[0]!, payload: undefined }),
    ids: [...adminEvents, ...producerEvents, ...consumerEvents].every((e) => typeof e.id === 'number'),
    admin: { order: adminEvents.filter((e) => e.type !== 'REQUEST').map((e) => e.type), shapes: shapes(adminEvents, prefix), requests: requests(adminEvents, brokers, 'admin') },
    producer: { order: producerEvents.filter((e) => e.type !== 'REQUEST').map((e) => e.type), shapes: shapes(producerEvents, prefix), requests: requests(producerEvents, brokers, 'producer') },
    consumer: {
      shapes: shapes(consumerEvents, prefix),
      requests: requests(consumerEvents, brokers, 'consumer'),
      kinds: [...new Set(kinds)].sort(),
      // Each batch: START, END, then the commit of what it resolved.
      deterministic: /^CONNECT CONNECT GROUP_JOIN (START_BATCH_PROCESS END_BATCH_PROCESS COMMIT_OFFSETS )+STOP DISCONNECT$/.test(deterministic.join(' ')) || deterministic.join(' '),
      fetchesWithoutStart: unmatched,
      firstBatchAfterFetch: kinds.indexOf('FETCH') >= 0 && kinds.indexOf('FETCH') < kinds.indexOf('START_BATCH_PROCESS'),
      batch: { topic: batch.topic === topic, partitionIsNumber: typeof batch.partition, lagConsistent: BigInt(batch.highWatermark) - 1n - BigInt(batch.lastOffset) === BigInt(batch.offsetLag), lowConsistent: BigInt(batch.highWatermark) - 1n - BigInt(batch.firstOffset) === BigInt(batch.offsetLagLow), size: batch.batchSize === Number(BigInt(batch.lastOffset) - BigInt(batch.firstOffset)) + 1, durationOk: batch.duration >= 0 },
      join: { groupId: join.groupId === groupId, isLeader: join.isLeader, leaderIsMember: join.leaderId === join.memberId, protocol: join.groupProtocol, assignment: Object.fromEntries(Object.entries(join.memberAssignment as Record<string, number[]>).map(([t, ps]) => [t.slice(prefix.length), [...ps].sort()])), durationOk: join.duration >= 0 },
      heartbeat: { groupId: heartbeat.groupId === groupId, memberId: heartbeat.memberId === join.memberId, generationOk: heartbeat.groupGenerationId >= 1 },
      fetch: (() => {
        const f = consumerEvents.find((e) => e.type === 'FETCH')!.payload
        const s = consumerEvents.find((e) => e.type === 'FETCH_START')!.payload
        return { numberOfBatches: f.numberOfBatches, sameNode: f.nodeId === s.nodeId, durationOk: f.duration >= 0 }
      })(),
    },
  }
}
