import type { BrokerContext } from '../../context.js'

/** The broker settings of share groups (config.ts holds them by Kafka's group.share.* names, with Kafka 4.4's defaults). */
export interface ShareGroupSettings {
  /** group.share.record.lock.duration.ms */
  recordLockDurationMs: number
  /** group.share.delivery.count.limit */
  deliveryCountLimit: number
  /** group.share.partition.max.record.locks */
  partitionMaxRecordLocks: number
  /** group.share.session.timeout.ms */
  sessionTimeoutMs: number
  /** group.share.heartbeat.interval.ms */
  heartbeatIntervalMs: number
  /** group.share.max.size */
  maxSize: number
}

// Kafka's group.share.max.size default; not configurable here.
const MAX_SIZE = 200

export function shareGroupSettings(broker: BrokerContext): ShareGroupSettings {
  const c = broker.config
  return {
    recordLockDurationMs: c.groupShareRecordLockDurationMs,
    deliveryCountLimit: c.groupShareDeliveryCountLimit,
    partitionMaxRecordLocks: c.groupSharePartitionMaxRecordLocks,
    sessionTimeoutMs: c.groupShareSessionTimeoutMs,
    heartbeatIntervalMs: c.groupShareHeartbeatIntervalMs,
    maxSize: MAX_SIZE,
  }
}

export type ShareAutoOffsetReset = 'earliest' | 'latest'

/** Where a share group's config (share.auto.offset.reset, a GROUP config resource) is looked up; the group-config store plugs in here. */
export type GroupConfigLookup = (groupId: string, name: string) => string | undefined

const lookups = new WeakMap<BrokerContext, GroupConfigLookup>()

export function setGroupConfigLookup(broker: BrokerContext, lookup: GroupConfigLookup): void {
  lookups.set(broker, lookup)
}

/** share.auto.offset.reset of a group: Kafka's default is latest. by_duration is not supported here and reads as latest. */
export function shareAutoOffsetReset(broker: BrokerContext, groupId: string): ShareAutoOffsetReset {
  const v = lookups.get(broker)?.(groupId, 'share.auto.offset.reset')
  return v === 'earliest' ? 'earliest' : 'latest'
}
