import { AdminError, ProtocolError, type Admin } from '@tidelog/client'
import { ErrorCodes } from '@tidelog/protocol'
import type { InternalTopologyBuilder } from '../internal/builder.js'
import { StreamsException } from '../errors.js'

/** Kafka Streams' RepartitionTopicConfig defaults. */
const REPARTITION_CONFIG = { 'cleanup.policy': 'delete', 'segment.bytes': '52428800', 'retention.ms': '-1' }
/** Kafka Streams' changelog default (UnwindowedUnversionedChangelogTopicConfig): compacted. */
const CHANGELOG_CONFIG = { 'cleanup.policy': 'compact' }

export interface TopicPlan {
  name: string
  partitions: number
  configs: { [k: string]: string }
}

/**
 * What Kafka Streams' InternalTopicManager would create: each repartition topic with the
 * partition count of the sub-topology writing it (or Repartitioned's), each changelog with the
 * partition count of its store's sub-topology (one partition per task). Sub-topology counts are
 * the largest of their source topics', resolved until nothing changes (a repartition topic's
 * count comes from upstream).
 */
export async function planInternalTopics(builder: InternalTopologyBuilder, applicationId: string, admin: Admin): Promise<{ topics: TopicPlan[]; partitionsBySubtopology: Map<number, number> }> {
  const groups = builder.nodeGroups()
  const external = new Set<string>()
  for (const n of builder.nodes.values()) if (n.kind === 'source') for (const t of n.topics) if (!builder.internalTopics.has(t)) external.add(t)
  const counts = new Map<string, number>()
  if (external.size > 0) {
    for (const d of await admin.describeTopics([...external])) counts.set(d.name, d.partitions.length)
  }
  for (const t of external) if (!counts.has(t)) throw new StreamsException(`source topic ${t} does not exist: Kafka Streams needs its source topics created first`)
  for (const it of builder.internalTopics.values()) if (it.numberOfPartitions) counts.set(it.name, it.numberOfPartitions)
  const bySub = new Map<number, number>()
  for (let changed = true; changed;) {
    changed = false
    for (const [id, names] of groups) {
      let n = 0
      for (const name of names) {
        const f = builder.nodes.get(name)!
        if (f.kind === 'source') for (const t of f.topics) n = Math.max(n, counts.get(t) ?? 0)
      }
      if (n > 0 && bySub.get(id) !== n) {
        bySub.set(id, n)
        changed = true
      }
      for (const name of names) {
        const f = builder.nodes.get(name)!
        if (f.kind === 'sink' && f.topic !== undefined && builder.internalTopics.has(f.topic) && n > 0 && !counts.has(f.topic)) {
          counts.set(f.topic, n)
          changed = true
        }
      }
    }
  }
  const topics: TopicPlan[] = []
  for (const it of builder.internalTopics.values()) {
    const partitions = counts.get(it.name)
    if (partitions === undefined) throw new StreamsException(`cannot tell how many partitions ${it.name} needs`)
    topics.push({ name: `${applicationId}-${it.name}`, partitions, configs: { ...REPARTITION_CONFIG } })
  }
  for (const [store, entry] of builder.stores) {
    if (!entry.builder.loggingEnabled) continue
    const sub = [...groups].find(([, names]) => names.some((n) => entry.processors.has(n)))
    if (sub === undefined) continue
    const partitions = bySub.get(sub[0])
    if (partitions === undefined) throw new StreamsException(`cannot tell how many partitions the changelog of ${store} needs`)
    topics.push({ name: `${applicationId}-${store}-changelog`, partitions, configs: { ...CHANGELOG_CONFIG, ...entry.builder.logConfig } })
  }
  return { topics, partitionsBySubtopology: bySub }
}

/** Creates what is missing; an existing topic with another partition count is an error, as in Java. */
export async function createInternalTopics(admin: Admin, topics: TopicPlan[], replicationFactor: number | undefined, retry = true): Promise<void> {
  if (topics.length === 0) return
  const existing = new Map<string, number>()
  const names = new Set(await admin.listTopics())
  const present = topics.filter((t) => names.has(t.name)).map((t) => t.name)
  if (present.length > 0) for (const d of await admin.describeTopics(present)) existing.set(d.name, d.partitions.length)
  for (const t of topics) {
    const n = existing.get(t.name)
    if (n !== undefined && n !== t.partitions) {
      throw new StreamsException(`Existing internal topic ${t.name} has invalid partitions: expected: ${t.partitions}; actual: ${n}. Use 'kafka.tools.StreamsResetter' tool to clean up invalid topics before processing.`)
    }
  }
  const missing = topics.filter((t) => !existing.has(t.name))
  if (missing.length === 0) return
  try {
    await admin.createTopics(missing.map((t) => ({
      name: t.name,
      partitions: t.partitions,
      ...(replicationFactor !== undefined && replicationFactor > 0 ? { replicationFactor } : {}),
      configs: t.configs,
    })))
  } catch (e) {
    // Instances starting together race to create them (Java's InternalTopicManager retries on
    // TopicExistsException): whoever lost checks what the winner created, once.
    if (!(e instanceof AdminError) || !e.errors.every((x) => x instanceof ProtocolError && x.code === ErrorCodes.TOPIC_ALREADY_EXISTS) || !retry) throw e
    await createInternalTopics(admin, topics, replicationFactor, false)
  }
}
