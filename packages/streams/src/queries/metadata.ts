import type { Admin } from '@tidelog/client'
import { murmur2Partition } from '@tidelog/protocol'
import type { InternalTopologyBuilder } from '../internal/builder.js'
import { serializeSync } from '../store.js'
import type { Serializer } from '../serdes.js'
import { decodeAssignmentInfo, decodeSubscriptionInfo } from '../runtime/assignment/codec.js'

/** Java's HostInfo: an instance's application.server. */
export interface HostInfo {
  host: string
  port: number
}

/** Java's HostInfo.unavailable(): for an instance that set no application.server. */
export const UNAVAILABLE_HOST: HostInfo = { host: 'unavailable', port: -1 }

/** Java's KeyQueryMetadata: which instance holds a key's partition of a store, and which keep standby copies of it. */
export interface KeyQueryMetadata {
  activeHost: HostInfo
  standbyHosts: HostInfo[]
  partition: number
}

export const KEY_QUERY_METADATA_NOT_AVAILABLE: KeyQueryMetadata = { activeHost: UNAVAILABLE_HOST, standbyHosts: [], partition: -1 }

/** Java's StreamsMetadata: one instance of the application (all its threads), its stores and partitions, active and standby. */
export interface StreamsMetadata {
  hostInfo: HostInfo
  stateStoreNames: Set<string>
  topicPartitions: { topic: string; partition: number }[]
  standbyStateStoreNames: Set<string>
  standbyTopicPartitions: { topic: string; partition: number }[]
}

interface Client {
  host: HostInfo
  partitions: { topic: string; partition: number }[]
  /** Standby task ids ("<subtopology>_<partition>"). */
  standby: Set<string>
}

export function parseHostInfo(server: string | undefined): HostInfo {
  if (server === undefined || server === '') return UNAVAILABLE_HOST
  const at = server.lastIndexOf(':')
  const port = Number(server.slice(at + 1))
  if (at <= 0 || !Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError(`application.server must be host:port (got ${server})`)
  return { host: server.slice(0, at).replace(/^\[(.*)\]$/, '$1'), port }
}

/**
 * Java's StreamsMetadataState: who holds which task, rebuilt from the group after each
 * assignment. A store's partition p lives with the member assigned partition p of its
 * sub-topology's source topics (co-partitioned, so the range assignor gives them to one member).
 */
export class StreamsMetadataState {
  private members: Client[] = []
  private initialized = false
  private counts = new Map<string, number>()

  private readonly self: HostInfo

  constructor(private readonly builder: InternalTopologyBuilder, private readonly applicationId: string, applicationServer: string | undefined) {
    this.self = parseHostInfo(applicationServer)
  }

  /** A GlobalKTable's store: every instance holds all of it. */
  private isGlobalStore(name: string): boolean {
    const entry = this.builder.stores.get(name)
    return entry !== undefined && this.builder.isGlobalGroup([...entry.processors].flatMap((p) => this.builder.nodes.get(p)?.predecessors ?? []))
  }

  async refresh(admin: Admin): Promise<void> {
    const [group] = await admin.describeGroups([this.applicationId])
    if (group === undefined || group.state !== 'Stable') return
    const topics = new Set<string>()
    for (const m of group.members) for (const a of m.memberAssignment?.assignedPartitions ?? []) topics.add(a.topic)
    if (topics.size > 0) this.counts = new Map((await admin.describeTopics([...topics])).map((d) => [d.name, d.partitions.length]))
    // One entry per instance (processId), as Java's StreamsMetadata: its threads are separate members.
    const byProcess = new Map<string, Client>()
    for (const m of group.members) {
      let sub
      let asg
      try {
        sub = decodeSubscriptionInfo(m.subscription?.userData)
        asg = decodeAssignmentInfo(m.memberAssignment?.userData)
      } catch {
        // A member whose userData cannot be read holds nothing queryable.
      }
      const pid = sub?.processId || `member:${m.memberId}`
      let c = byProcess.get(pid)
      if (c === undefined) byProcess.set(pid, (c = { host: parseHostInfo(sub?.endpoint), partitions: [], standby: new Set() }))
      for (const a of m.memberAssignment?.assignedPartitions ?? []) for (const partition of a.partitions) c.partitions.push({ topic: a.topic, partition })
      for (const t of asg?.standby ?? []) c.standby.add(t)
    }
    this.members = [...byProcess.values()]
    this.initialized = true
  }

  invalidate(): void {
    this.initialized = false
  }

  /** The sub-topology's source topics as the broker names them, for the sub-topology holding `storeName`; undefined for an unknown store. */
  private sourceTopicsOf(storeName: string): string[] | undefined {
    return this.subtopologyOf(storeName)?.topics
  }

  private subtopologyOf(storeName: string): { id: number; topics: string[] } | undefined {
    const entry = this.builder.stores.get(storeName)
    if (entry === undefined) return undefined
    for (const [id, names] of this.builder.nodeGroups()) {
      if (!names.some((n) => entry.processors.has(n))) continue
      const topics: string[] = []
      for (const n of names) {
        const f = this.builder.nodes.get(n)!
        if (f.kind === 'source') for (const t of f.topics) topics.push(this.builder.decorate(t, this.applicationId))
      }
      return { id, topics }
    }
    return undefined
  }

  /** The source partitions of a standby task id, over the topics of its sub-topology. */
  private standbyPartitions(c: Client): { topic: string; partition: number }[] {
    const out: { topic: string; partition: number }[] = []
    for (const [id, names] of this.builder.nodeGroups()) {
      for (const task of c.standby) {
        const [sub, partition] = task.split('_').map(Number) as [number, number]
        if (sub !== id) continue
        for (const n of names) {
          const f = this.builder.nodes.get(n)!
          if (f.kind === 'source') for (const t of f.topics) out.push({ topic: this.builder.decorate(t, this.applicationId), partition })
        }
      }
    }
    return out
  }

  /** Java's getKeyQueryMetadataForKey with the default partitioner (murmur2 of the serialized key, over the source topic with most partitions). */
  keyQueryMetadata<K>(storeName: string, key: K, keySerializer: Serializer<K>): KeyQueryMetadata | null {
    const topics = this.sourceTopicsOf(storeName)
    if (topics === undefined) return null
    // Java answers a global store's query with this instance and no partition.
    if (this.isGlobalStore(storeName)) return { activeHost: this.self, standbyHosts: [], partition: -1 }
    if (!this.initialized) return KEY_QUERY_METADATA_NOT_AVAILABLE
    const counts = this.counts
    let widest: string | undefined
    for (const t of topics) if (widest === undefined || (counts.get(t) ?? 0) > (counts.get(widest) ?? 0)) widest = t
    const n = widest === undefined ? undefined : counts.get(widest)
    if (n === undefined || n === 0) return KEY_QUERY_METADATA_NOT_AVAILABLE
    const partition = murmur2Partition(serializeSync(keySerializer as never, key, true, widest), n)
    const owner = this.members.find((m) => m.partitions.some((tp) => topics.includes(tp.topic) && tp.partition === partition))
    if (owner === undefined) return KEY_QUERY_METADATA_NOT_AVAILABLE
    const sub = this.subtopologyOf(storeName)!.id
    const standbyHosts = this.members.filter((m) => m.standby.has(`${sub}_${partition}`)).map((m) => m.host)
    return { activeHost: owner.host, standbyHosts, partition }
  }

  allMetadata(): StreamsMetadata[] {
    if (!this.initialized) return []
    return this.members.map((m) => {
      const stores = new Set<string>()
      const standbyStores = new Set<string>()
      const standbyPartitions = this.standbyPartitions(m)
      for (const name of this.builder.stores.keys()) {
        const topics = this.sourceTopicsOf(name)
        // Global stores are on every instance, as Java lists them.
        if (this.isGlobalStore(name) || (topics && m.partitions.some((tp) => topics.includes(tp.topic)))) stores.add(name)
        if (!this.isGlobalStore(name) && topics && standbyPartitions.some((tp) => topics.includes(tp.topic))) standbyStores.add(name)
      }
      return { hostInfo: m.host, stateStoreNames: stores, topicPartitions: m.partitions, standbyStateStoreNames: standbyStores, standbyTopicPartitions: standbyPartitions }
    })
  }
}
