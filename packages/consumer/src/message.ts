import type { Record, RecordHeader } from '@tidelog/protocol'
import type { Message } from './types.js'

// One class for every message keeps their shape monomorphic on the delivery path.
export class ConsumerMessage implements Message {
  readonly topic: string
  readonly partition: number
  readonly offset: bigint
  readonly key: Buffer | null
  readonly value: Buffer | null
  readonly headers: RecordHeader[]
  readonly timestamp: bigint
  readonly timestampType: 0 | 1
  readonly leaderEpoch: number

  constructor(topic: string, partition: number, r: Record, timestampType: 0 | 1, leaderEpoch: number) {
    this.topic = topic
    this.partition = partition
    this.offset = r.offset
    this.key = r.key
    this.value = r.value
    this.headers = r.headers
    this.timestamp = r.timestamp
    this.timestampType = timestampType
    this.leaderEpoch = leaderEpoch
  }
}
