import type { Admin } from '@tidelog/client'
import { rangeAssignor, type Assignor } from '@tidelog/consumer'
import { murmur2Partition } from '@tidelog/protocol'
import type { InternalTopologyBuilder } from '../internal/builder.js'
import { serializeSync } from '../store.js'
import type { Serializer } from '../serdes.js'

/** Java's HostInfo: an instance's application.server. */
export interface HostInfo {
  host: string
  port: number
}

/** Java's HostInfo.unavailable(): for an instance that set no application.server. */
export const UNAVAILABLE_HOST: HostInfo = { host: 'unavailable', port: -1 }

/** Java's KeyQueryMetadata: which instance holds a key's partition of a store. Standbys are not implemented, so the list is empty. */
export interface KeyQueryMetadata {
  activeHost: HostInfo
  standbyHosts: HostInfo[]
  partition: number
}

export const KEY_QUERY_METADATA_NOT_AVAILABLE: KeyQueryMetadata = { activeHost: UNAVAILABLE_HOST, standbyHosts: [], partition: -1 }

/** Java's StreamsMetadata: one instance of the application, its stores and partitions. */
export interface StreamsMetadata {
  hostInfo: HostInfo
  stateStoreNames: Set<string>
  topicPartitions: { topic: string; partition: number }[]
}

export function parseHostInfo(server: string | undefined): HostInfo {
  if (server === undefined || server === '') return UNAVAILABLE_HOST
  const at = server.lastIndexOf(':')
  const port = Number(server.slice(at + 1))
  if (at <= 0 || !Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError(`application.server must be host:port (got ${server})`)
  return { host: server.slice(0, at).replace(/^\[(.*)\]$/, '$1'), port }
}

const USER_DATA_VERSION = 1

/**
 * The range assignor, with this instance's application.server in its subscription userData (a
 * version byte then the UTF-8 host:port; Java's StreamsPartitionAssignor puts it in its own
 * SubscriptionInfo encoding, which this is not). Every instance reads all members' endpoints and
 * assignments back with DescribeGroups after each rebalance.
 */
export function hostAdvertisingAssignor(applicationServer: string | undefined): Assignor {
  const body = Buffer.from(applicationServer ?? '', 'utf8')
  const userData = Buffer.concat([Buffer.from([USER_DATA_VERSION]), body])
  return {
    name: rangeAssignor.name,
    ...(rangeAssignor.protocols ? { protocols: rangeAssignor.protocols } : {}),
    subscriptionUserData: () => userData,
    assign: (input) => rangeAssignor.assign(input),
  }
}

function decodeServer(userData: Uint8Array | null | undefined): string | undefined {
  if (!userData || userData.length < 1 || userData[0] !== USER_DATA_VERSION) return undefined
  return Buffer.from(userData.subarray(1)).toString('utf8')
}

/**
 * Java's StreamsMetadataState: who holds which task, rebuilt from the group after each
 * assignment. A store's partition p lives with the member assigned partition p of its
 * sub-topology's source topics (co-partitioned, so the range assignor gives them to one member).
 */
export class StreamsMetadataState {
  private members: { host: HostInfo; partitions: { topic: string; partition: number }[] }[] = []
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
    this.members = group.members.map((m) => ({
      host: parseHostInfo(decodeServer(m.subscription?.userData)),
      partitions: (m.memberAssignment?.assignedPartitions ?? []).flatMap((a) => a.partitions.map((partition) => ({ topic: a.topic, partition }))),
    }))
    this.initialized = true
  }

  invalidate(): void {
    this.initialized = false
  }

  /** The sub-topology's source topics as the broker names them, for the sub-topology holding `storeName`; undefined for an unknown store. */
  private sourceTopicsOf(storeName: string): string[] | undefined {
    const entry = this.builder.stores.get(storeName)
    if (entry === undefined) return undefined
    for (const names of this.builder.nodeGroups().values()) {
      if (!names.some((n) => entry.processors.has(n))) continue
      const topics: string[] = []
      for (const n of names) {
        const f = this.builder.nodes.get(n)!
        if (f.kind === 'source') for (const t of f.topics) topics.push(this.builder.decorate(t, this.applicationId))
      }
      return topics
    }
    return undefined
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
    return { activeHost: owner.host, standbyHosts: [], partition }
  }

  allMetadata(): StreamsMetadata[] {
    if (!this.initialized) return []
    return this.members.map((m) => {
      const stores = new Set<string>()
      for (const [name, entry] of this.builder.stores) {
        const topics = this.sourceTopicsOf(name)
        // Global stores are on every instance, as Java lists them.
        if (this.isGlobalStore(name) || (topics && m.partitions.some((tp) => topics.includes(tp.topic)))) stores.add(name)
      }
      return { hostInfo: m.host, stateStoreNames: stores, topicPartitions: m.partitions }
    })
  }
}
