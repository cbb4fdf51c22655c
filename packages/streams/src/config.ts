import type { Serde } from '@tidelog/client'

/** Kafka Streams' configuration under Java's names (StreamsConfig); serdes are objects, not class names. */
export interface StreamsConfig {
  'application.id'?: string
  'bootstrap.servers'?: string | string[]
  'default.key.serde'?: Serde<any>
  'default.value.serde'?: Serde<any>
  /** Only at_least_once is implemented so far. */
  'processing.guarantee'?: 'at_least_once'
  'commit.interval.ms'?: number
  'num.stream.threads'?: number
  'replication.factor'?: number
}
