import type { Cluster, ClusterMetadata } from '@tidelog/client'
import type { PartitionState } from './positions.js'

/**
 * KIP-392: the node to fetch a partition from. A leader that runs a replica selector (Kafka's
 * RackAwareReplicaSelector, given the Fetch's rackId) answers with preferredReadReplica and no
 * records; the consumer then fetches from that replica until it errors, is unreachable (in
 * reconnect backoff), leaves the metadata, or metadata.max.age.ms passes, as Java's
 * SubscriptionState does; then from the leader again, which may name a replica anew.
 * Returns -1 while the partition has no usable leader.
 */
export function readReplica(s: PartitionState, metadata: ClusterMetadata, cluster: Cluster, now: number): number {
  const p = metadata.partition(s.topic, s.partition)
  if (p === undefined || p.leader < 0 || !metadata.brokers.has(p.leader)) return -1
  const r = s.preferredReplica
  if (r >= 0) {
    if (now < s.preferredReplicaUntil && metadata.brokers.has(r) && !cluster.pool.isBackingOff(r)) return r
    s.preferredReplica = -1
  }
  return p.leader
}

/**
 * Takes a preferred read replica from a leader's Fetch answer (-1: none). Returns whether the
 * partition moves to another node, so the fetcher starts or wakes that node's loop.
 */
export function adoptPreferredReplica(s: PartitionState, replica: number, leader: number, cluster: Cluster, now: number): boolean {
  // A leader naming itself (or nobody) means: stay.
  if (replica < 0 || replica === leader) return false
  const moved = s.preferredReplica !== replica
  s.preferredReplica = replica
  s.preferredReplicaUntil = now + cluster.metadataMaxAgeMs
  if (moved) cluster.logger.debug({ topic: s.topic, partition: s.partition, replica, expiresInMs: cluster.metadataMaxAgeMs }, 'fetching from the preferred read replica (KIP-392)')
  return moved
}

/** Forgets the preferred replica after an error from it; returns whether there was one. */
export function clearPreferredReplica(s: PartitionState): boolean {
  if (s.preferredReplica < 0) return false
  s.preferredReplica = -1
  return true
}
