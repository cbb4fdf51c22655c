import { TidelogError } from './base.js'
import type { ErrorName } from './codes.js'
import { errorByCode } from './lookup.js'

/** Where an error code came from; every field is optional. */
export interface ProtocolErrorContext {
  /** API name, e.g. 'Produce'. */
  api?: string
  apiKey?: number
  topic?: string
  partition?: number
  groupId?: string
  /** The error message the broker sent with the code (responses carry it as a nullable string). */
  message?: string | null
}

/**
 * An error code returned by a Kafka broker (or raised by our broker to send back).
 * `name` stays 'ProtocolError' like every other JS error class; the Kafka name is
 * in `type`, and `retriable` comes from Kafka's table.
 */
export class ProtocolError extends TidelogError {
  readonly code: number
  /** Kafka's name for the code, e.g. 'NOT_LEADER_OR_FOLLOWER' ('UNKNOWN' if not in the table). */
  readonly type: ErrorName | 'UNKNOWN'
  readonly api: string | undefined
  readonly apiKey: number | undefined
  readonly topic: string | undefined
  readonly partition: number | undefined
  readonly groupId: string | undefined
  /** The broker's own message, if it sent one. */
  readonly serverMessage: string | undefined

  constructor(code: number, context: ProtocolErrorContext = {}, options?: { cause?: unknown }) {
    const info = errorByCode(code)
    super(describe(info.name, code, info.message, context), { cause: options?.cause, retriable: info.retriable })
    this.code = code
    this.type = info.name as ErrorName | 'UNKNOWN'
    this.api = context.api
    this.apiKey = context.apiKey
    this.topic = context.topic
    this.partition = context.partition
    this.groupId = context.groupId
    this.serverMessage = context.message == null || context.message === '' ? undefined : context.message
  }
}

function describe(type: string, code: number, defaultMessage: string, c: ProtocolErrorContext): string {
  const where: string[] = []
  if (c.api !== undefined || c.apiKey !== undefined) {
    where.push(c.apiKey === undefined ? `api ${c.api}` : `api ${c.api ?? 'key'} (${c.apiKey})`)
  }
  if (c.topic !== undefined) where.push(c.partition === undefined ? `topic ${c.topic}` : `partition ${c.topic}-${c.partition}`)
  else if (c.partition !== undefined) where.push(`partition ${c.partition}`)
  if (c.groupId !== undefined) where.push(`group ${c.groupId}`)
  // The broker's message is more specific than the table's, so it leads; the
  // default follows only when the broker sent none.
  const text = c.message == null || c.message === '' ? defaultMessage : c.message
  return `${type} (${code})${where.length > 0 ? ` [${where.join(', ')}]` : ''}${text !== '' ? `: ${text}` : ''}`
}

/** Throws a ProtocolError unless `code` is 0 (NONE). */
export function throwIfError(code: number, context?: ProtocolErrorContext): void {
  if (code !== 0) throw new ProtocolError(code, context)
}
