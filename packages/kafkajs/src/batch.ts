import type { Batch as NativeBatch, Message as NativeMessage } from '@tidelog/consumer'
import type { IHeaders, KafkaMessage } from './types.js'

/** kafkajs' headers: an object, a repeated key becoming an array of its values. */
export function headersOf(m: NativeMessage): IHeaders {
  const out: IHeaders = {}
  for (const h of m.headers) {
    const v = h.value === null ? (null as unknown as Buffer) : Buffer.isBuffer(h.value) ? h.value : Buffer.from(h.value)
    const prev = out[h.key]
    if (prev === undefined) out[h.key] = v
    else if (Array.isArray(prev)) prev.push(v)
    else out[h.key] = [prev, v]
  }
  return out
}

/** A bigint's decimal string; below 2^30 through a small integer, which V8 turns into a string faster. */
function decimal(v: bigint): string {
  return v >= 0n && v < 0x40000000n ? String(Number(v)) : String(v)
}

export function messageOf(m: NativeMessage, timestamp: string = String(m.timestamp)): KafkaMessage {
  return {
    key: m.key,
    value: m.value,
    timestamp,
    // Attributes of the record (0 for records in v2 batches), as kafkajs reports them.
    attributes: 0,
    offset: decimal(m.offset),
    headers: m.headers.length === 0 ? {} : headersOf(m),
  }
}

/**
 * kafkajs' messages for a native batch. Records written in the same millisecond (most of a
 * busy batch) share one timestamp string: turning a 13-digit timestamp into a string cost
 * more than the rest of a message.
 */
export function messagesOf(list: readonly NativeMessage[]): KafkaMessage[] {
  const out = new Array<KafkaMessage>(list.length)
  let ts: bigint | undefined
  let tsString = ''
  for (let i = 0; i < list.length; i++) {
    const m = list[i]!
    if (m.timestamp !== ts) {
      ts = m.timestamp
      tsString = String(ts)
    }
    out[i] = messageOf(m, tsString)
  }
  return out
}

/** kafkajs' Batch, with its offset arithmetic on decimal strings. */
export class Batch {
  readonly topic: string
  readonly partition: number
  readonly highWatermark: string
  readonly messages: KafkaMessage[]

  constructor(b: NativeBatch, messages: KafkaMessage[] = messagesOf(b.messages)) {
    this.topic = b.topic
    this.partition = b.partition
    this.highWatermark = String(b.highWatermark)
    this.messages = messages
  }

  isEmpty(): boolean {
    return this.messages.length === 0
  }

  firstOffset(): string | null {
    return this.isEmpty() ? null : this.messages[0]!.offset
  }

  lastOffset(): string {
    return this.isEmpty() ? String(BigInt(this.highWatermark) - 1n) : this.messages[this.messages.length - 1]!.offset
  }

  /** Messages between the batch's last one and the end of the partition. */
  offsetLag(): string {
    return String(BigInt(this.highWatermark) - 1n - BigInt(this.lastOffset()))
  }

  /** Messages between the batch's first one and the end of the partition. */
  offsetLagLow(): string {
    if (this.isEmpty()) return '0'
    return String(BigInt(this.highWatermark) - 1n - BigInt(this.firstOffset()!))
  }
}
