import { isUtf8 } from 'node:buffer'
import type { Attributes } from '@opentelemetry/api'

/**
 * Attribute names of OpenTelemetry's messaging semantic conventions v1.30.0 (Kafka page,
 * status Development). These names hold from v1.27.0 (`messaging.consumer.group.name`,
 * `messaging.operation.type`) to v1.44.
 */
export const ATTR = {
  system: 'messaging.system',
  operationType: 'messaging.operation.type',
  operationName: 'messaging.operation.name',
  destination: 'messaging.destination.name',
  partition: 'messaging.destination.partition.id',
  clientId: 'messaging.client.id',
  group: 'messaging.consumer.group.name',
  batchCount: 'messaging.batch.message_count',
  key: 'messaging.kafka.message.key',
  offset: 'messaging.kafka.offset',
  tombstone: 'messaging.kafka.message.tombstone',
  errorType: 'error.type',
} as const

/**
 * A key's canonical string form, or undefined where it has none (the convention says to leave
 * the attribute out then): strings, numbers and bigints as written, bytes only when valid UTF-8.
 */
export function keyString(key: unknown): string | undefined {
  if (typeof key === 'string') return key
  if (typeof key === 'number' || typeof key === 'bigint') return String(key)
  if (key instanceof Uint8Array && isUtf8(key)) return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('utf8')
  return undefined
}

function kafkaName(err: unknown): string | undefined {
  const t = err !== null && typeof err === 'object' ? (err as { type?: unknown }).type : undefined
  return typeof t === 'string' && t !== '' ? t : undefined
}

/**
 * error.type: Kafka's error name when a broker's error code is behind it (ProtocolError.type,
 * or that of the cause of an error that wraps one: RecordTooLargeError for MESSAGE_TOO_LARGE),
 * else the error's class name.
 */
export function errorType(err: unknown): string {
  if (err !== null && typeof err === 'object') {
    const t = kafkaName(err) ?? kafkaName((err as { cause?: unknown }).cause)
    if (t !== undefined) return t
    const n = (err as { name?: unknown }).name
    if (typeof n === 'string' && n !== '') return n
  }
  return '_OTHER'
}

export function base(operation: 'send' | 'process' | 'receive', clientId: string, topic: string | undefined): Attributes {
  // Literal names (ATTR's), not computed keys: V8 builds this from a boilerplate, once per span.
  const a: Attributes = { 'messaging.system': 'kafka', 'messaging.operation.type': operation, 'messaging.operation.name': operation, 'messaging.client.id': clientId }
  if (topic !== undefined) a[ATTR.destination] = topic
  return a
}

/** Attributes of one consumed message. */
export function messageAttributes(a: Attributes, m: { partition: number; offset: bigint; key: unknown; value: unknown }): Attributes {
  a[ATTR.partition] = String(m.partition)
  a[ATTR.offset] = Number(m.offset)
  const k = keyString(m.key)
  if (k !== undefined) a[ATTR.key] = k
  if (m.value === null) a[ATTR.tombstone] = true
  return a
}
