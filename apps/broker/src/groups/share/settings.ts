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

/** The group's own overrides in the dynamic config store (GROUP config resources, set with IncrementalAlterConfigs). */
function storedGroupConfig(broker: BrokerContext, groupId: string, name: string): string | undefined {
  return broker.topics.dynamic.group(groupId)[name]
}

/** share.auto.offset.reset of a group: Kafka's default is latest. by_duration is not supported here and reads as latest. */
export function shareAutoOffsetReset(broker: BrokerContext, groupId: string): ShareAutoOffsetReset {
  const v = storedGroupConfig(broker, groupId, 'share.auto.offset.reset')
  return v === 'earliest' ? 'earliest' : 'latest'
}
