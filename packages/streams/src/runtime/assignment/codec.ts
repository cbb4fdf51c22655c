import { StreamsException } from '../../errors.js'

/**
 * Our subscription and assignment userData (Java's SubscriptionInfo / AssignmentInfo carry the
 * same facts in Kafka Streams' own binary layout, which this is not): a version byte, then UTF-8
 * JSON. Version 1 carried only application.server; version 2 adds what the leader needs for
 * sticky placement and standby replicas, and the error code (KIP-671's SHUTDOWN_APPLICATION).
 */
export const USERDATA_VERSION = 2

/** Java's AssignorError codes, as Kafka Streams sends them in AssignmentInfo. */
export const AssignorError = {
  NONE: 0,
  INCOMPLETE_SOURCE_TOPIC_METADATA: 1,
  VERSION_PROBING: 2,
  ASSIGNMENT_ERROR: 3,
  SHUTDOWN_REQUESTED: 4,
} as const
export type AssignorErrorCode = (typeof AssignorError)[keyof typeof AssignorError]

/** One stream thread's subscription: which client (process) it belongs to and what state it holds. */
export interface SubscriptionInfo {
  /** Java's processId: the client (one KafkaStreams instance) the thread belongs to. */
  processId: string
  /** application.server ('' when unset). */
  endpoint: string
  /** Tasks this thread ran as active in the last generation (Java's prevTasks). */
  prevActive: string[]
  /** Standby tasks this thread kept (Java's standbyTasks). */
  prevStandby: string[]
  /** Java's taskOffsetSums: per task with local state, the sum of its stores' changelog positions (the leader derives lags from them). */
  offsetSums: Record<string, string>
  errorCode: number
  /** Java's clientTags (KIP-708): the instance's client.tag.* configs, for rack-aware standby placement. */
  clientTags?: Record<string, string>
}

/** What the leader sends each thread beside its partitions. */
export interface AssignmentInfo {
  /** Standby tasks for this thread (their changelogs are read, nothing is processed). */
  standby: string[]
  errorCode: number
  /**
   * Java's AssignmentInfo.nextRebalanceMs (KIP-441): the wall-clock time at which this member
   * triggers a probing rebalance, because warm-up replicas are catching up somewhere. Only one
   * member (a thread of the leader's client) is given it; absent means none is scheduled.
   */
  nextRebalanceMs?: number
}

function encode(body: object): Uint8Array {
  return Buffer.concat([Buffer.from([USERDATA_VERSION]), Buffer.from(JSON.stringify(body), 'utf8')])
}

function decodeBody(bytes: Uint8Array, what: string): Record<string, unknown> {
  let body: unknown
  try {
    body = JSON.parse(Buffer.from(bytes.subarray(1)).toString('utf8'))
  } catch (e) {
    throw new StreamsException(`unreadable ${what} userData (version ${bytes[0]})`, { cause: e })
  }
  if (typeof body !== 'object' || body === null) throw new StreamsException(`unreadable ${what} userData: not an object`)
  return body as Record<string, unknown>
}

function stringRecord(v: unknown): Record<string, string> {
  const out: Record<string, string> = {}
  if (typeof v === 'object' && v !== null) for (const [k, x] of Object.entries(v)) if (typeof x === 'string') out[k] = x
  return out
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [])

export function encodeSubscriptionInfo(info: SubscriptionInfo): Uint8Array {
  return encode(info)
}

/** Version 1 (application.server only) still decodes, so an instance of the last release can stay in the group while others roll. */
export function decodeSubscriptionInfo(bytes: Uint8Array | null | undefined): SubscriptionInfo | undefined {
  if (!bytes || bytes.length < 1) return undefined
  if (bytes[0] === 1) return { processId: '', endpoint: Buffer.from(bytes.subarray(1)).toString('utf8'), prevActive: [], prevStandby: [], offsetSums: {}, errorCode: 0 }
  if (bytes[0] !== USERDATA_VERSION) return undefined
  const b = decodeBody(bytes, 'subscription')
  const sums: Record<string, string> = {}
  if (typeof b.offsetSums === 'object' && b.offsetSums !== null) {
    for (const [k, v] of Object.entries(b.offsetSums)) if (typeof v === 'string' && /^-?\d+$/.test(v)) sums[k] = v
  }
  return {
    processId: typeof b.processId === 'string' ? b.processId : '',
    endpoint: typeof b.endpoint === 'string' ? b.endpoint : '',
    prevActive: strings(b.prevActive),
    prevStandby: strings(b.prevStandby),
    offsetSums: sums,
    errorCode: typeof b.errorCode === 'number' ? b.errorCode : 0,
    clientTags: stringRecord(b.clientTags),
  }
}

export function encodeAssignmentInfo(info: AssignmentInfo): Uint8Array {
  return encode(info)
}

export function decodeAssignmentInfo(bytes: Uint8Array | null | undefined): AssignmentInfo | undefined {
  if (!bytes || bytes.length < 1 || bytes[0] !== USERDATA_VERSION) return undefined
  const b = decodeBody(bytes, 'assignment')
  const next = b.nextRebalanceMs
  return {
    standby: strings(b.standby),
    errorCode: typeof b.errorCode === 'number' ? b.errorCode : 0,
    ...(typeof next === 'number' && Number.isFinite(next) ? { nextRebalanceMs: next } : {}),
  }
}
