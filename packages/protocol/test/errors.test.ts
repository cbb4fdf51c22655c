import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import {
  DecodeError,
  ERROR_TABLE,
  ErrorCodes,
  KAFKA_ERRORS,
  ProtocolError,
  TidelogError,
  errorByCode,
  errorByName,
  isRetriable,
  throwIfError,
  type ErrorName,
} from '@tidelog/protocol'
import { render } from '../scripts/errors/generate.js'

// Facts from Apache Kafka's Errors.java and the exception classes' hierarchy.
const known: Array<[ErrorName, number, boolean]> = [
  ['UNKNOWN_SERVER_ERROR', -1, false],
  ['NONE', 0, false],
  ['OFFSET_OUT_OF_RANGE', 1, false],
  ['CORRUPT_MESSAGE', 2, true],
  ['UNKNOWN_TOPIC_OR_PARTITION', 3, true],
  ['LEADER_NOT_AVAILABLE', 5, true],
  ['NOT_LEADER_OR_FOLLOWER', 6, true],
  ['REQUEST_TIMED_OUT', 7, true],
  ['BROKER_NOT_AVAILABLE', 8, false],
  ['REPLICA_NOT_AVAILABLE', 9, true],
  ['MESSAGE_TOO_LARGE', 10, false],
  ['NETWORK_EXCEPTION', 13, true],
  ['COORDINATOR_LOAD_IN_PROGRESS', 14, true],
  ['COORDINATOR_NOT_AVAILABLE', 15, true],
  ['NOT_COORDINATOR', 16, true],
  ['INVALID_TOPIC_EXCEPTION', 17, false],
  ['NOT_ENOUGH_REPLICAS', 19, true],
  ['NOT_ENOUGH_REPLICAS_AFTER_APPEND', 20, true],
  ['ILLEGAL_GENERATION', 22, false],
  ['UNKNOWN_MEMBER_ID', 25, false],
  ['REBALANCE_IN_PROGRESS', 27, false],
  ['TOPIC_AUTHORIZATION_FAILED', 29, false],
  ['UNSUPPORTED_VERSION', 35, false],
  ['TOPIC_ALREADY_EXISTS', 36, false],
  ['INVALID_CONFIG', 40, false],
  ['NOT_CONTROLLER', 41, true],
  ['INVALID_REQUEST', 42, false],
  ['OUT_OF_ORDER_SEQUENCE_NUMBER', 45, false],
  ['DUPLICATE_SEQUENCE_NUMBER', 46, false],
  ['INVALID_PRODUCER_EPOCH', 47, false],
  ['CONCURRENT_TRANSACTIONS', 51, true],
  ['KAFKA_STORAGE_ERROR', 56, true],
  ['UNKNOWN_PRODUCER_ID', 59, false],
  ['GROUP_ID_NOT_FOUND', 69, false],
  ['FETCH_SESSION_ID_NOT_FOUND', 70, true],
  ['INVALID_FETCH_SESSION_EPOCH', 71, true],
  ['FENCED_LEADER_EPOCH', 74, true],
  ['UNKNOWN_LEADER_EPOCH', 75, true],
  ['OFFSET_NOT_AVAILABLE', 78, true],
  ['MEMBER_ID_REQUIRED', 79, false],
  ['FENCED_INSTANCE_ID', 82, false],
  ['INVALID_RECORD', 87, false],
  ['UNSTABLE_OFFSET_COMMIT', 88, true],
  ['THROTTLING_QUOTA_EXCEEDED', 89, true],
  ['PRODUCER_FENCED', 90, false],
  ['UNKNOWN_TOPIC_ID', 100, true],
  ['FENCED_MEMBER_EPOCH', 110, false],
  ['STALE_MEMBER_EPOCH', 113, false],
  ['TRANSACTION_ABORTABLE', 120, false],
  ['SHARE_SESSION_NOT_FOUND', 122, true],
  ['INVALID_REGULAR_EXPRESSION', 128, false],
  ['REBOOTSTRAP_REQUIRED', 129, false],
  ['SHARE_SESSION_LIMIT_REACHED', 133, true],
]

describe('error table', () => {
  it.each(known)('%s is code %i, retriable %s', (name, code, retriable) => {
    expect(ErrorCodes[name]).toBe(code)
    const info = errorByCode(code)
    expect(info.name).toBe(name)
    expect(info.code).toBe(code)
    expect(info.retriable).toBe(retriable)
    expect(isRetriable(code)).toBe(retriable)
    expect(errorByName(name)).toBe(info)
  })

  it('covers every code from -1 to the newest, each once', () => {
    expect(KAFKA_ERRORS.length).toBeGreaterThanOrEqual(130)
    const codes = KAFKA_ERRORS.map((e) => e.code)
    const names = KAFKA_ERRORS.map((e) => e.name)
    expect(new Set(codes).size).toBe(codes.length)
    expect(new Set(names).size).toBe(names.length)
    const max = Math.max(...codes)
    for (let c = -1; c <= max; c++) expect(codes).toContain(c)
    expect(Object.keys(ErrorCodes).length).toBe(KAFKA_ERRORS.length)
    for (const e of KAFKA_ERRORS) expect(ErrorCodes[e.name as ErrorName]).toBe(e.code)
  })

  it('carries Kafka default messages', () => {
    expect(errorByCode(3).message).toBe('This server does not host this topic-partition.')
    expect(errorByCode(27).message).toBe('The group is rebalancing, so a rejoin is needed.')
    expect(errorByCode(0).message).toBe('')
    for (const e of KAFKA_ERRORS) if (e.code !== 0) expect(e.message.length).toBeGreaterThan(5)
  })

  it('rows are immutable', () => {
    expect(Object.isFrozen(errorByCode(6))).toBe(true)
  })

  it('synthesises a non-retriable UNKNOWN row for codes it does not know, keeping the code', () => {
    for (const code of [9999, -2, -32768, 32767, 1.5, Number.NaN]) {
      const info = errorByCode(code)
      expect(info.name).toBe('UNKNOWN')
      expect(info.retriable).toBe(false)
      expect(Object.is(info.code, code)).toBe(true)
      expect(isRetriable(code)).toBe(false)
    }
    expect(errorByName('NOT_A_KAFKA_ERROR')).toBeUndefined()
    expect(errorByName('toString')).toBeUndefined()
  })

  it('codes.ts is what the generator makes of spec/errors/errors.json', () => {
    const spec = JSON.parse(readFileSync(new URL('../spec/errors/errors.json', import.meta.url), 'utf8'))
    const text = render(spec.errors)
    expect(readFileSync(new URL('../src/errors/codes.ts', import.meta.url), 'utf8')).toBe(text)
    expect(ERROR_TABLE.length).toBe(spec.errors.length)
  })
})

describe('ProtocolError', () => {
  it('carries code, Kafka type, retriable and context', () => {
    const e = new ProtocolError(6, { api: 'Produce', apiKey: 0, topic: 'events', partition: 3 })
    expect(e).toBeInstanceOf(ProtocolError)
    expect(e).toBeInstanceOf(TidelogError)
    expect(e).toBeInstanceOf(Error)
    expect(e.name).toBe('ProtocolError')
    expect(e.type).toBe('NOT_LEADER_OR_FOLLOWER')
    expect(e.code).toBe(6)
    expect(e.retriable).toBe(true)
    expect(e.api).toBe('Produce')
    expect(e.apiKey).toBe(0)
    expect(e.topic).toBe('events')
    expect(e.partition).toBe(3)
    expect(e.serverMessage).toBeUndefined()
    expect(e.message).toContain('NOT_LEADER_OR_FOLLOWER (6)')
    expect(e.message).toContain('api Produce (0)')
    expect(e.message).toContain('partition events-3')
    expect(e.message).toContain('not the current leader')
  })

  it('prefers the broker message and names the group', () => {
    const e = new ProtocolError(ErrorCodes.REBALANCE_IN_PROGRESS, {
      api: 'Heartbeat',
      groupId: 'billing',
      message: 'rebalance in progress for generation 7',
    })
    expect(e.retriable).toBe(false)
    expect(e.serverMessage).toBe('rebalance in progress for generation 7')
    expect(e.message).toBe('REBALANCE_IN_PROGRESS (27) [api Heartbeat, group billing]: rebalance in progress for generation 7')
  })

  it('treats a null or empty broker message as absent', () => {
    const e = new ProtocolError(3, { topic: 't', message: null })
    expect(e.serverMessage).toBeUndefined()
    expect(e.message).toBe('UNKNOWN_TOPIC_OR_PARTITION (3) [topic t]: This server does not host this topic-partition.')
    expect(new ProtocolError(3, { message: '' }).serverMessage).toBeUndefined()
  })

  it('works without context and for unknown codes', () => {
    expect(new ProtocolError(7).message).toBe('REQUEST_TIMED_OUT (7): The request timed out.')
    const u = new ProtocolError(4242)
    expect(u.type).toBe('UNKNOWN')
    expect(u.code).toBe(4242)
    expect(u.retriable).toBe(false)
    expect(u.message).toContain('UNKNOWN (4242)')
  })

  it('keeps a cause', () => {
    const cause = new DecodeError('x', 1)
    expect(new ProtocolError(2, {}, { cause }).cause).toBe(cause)
  })

  it('throwIfError throws for every code but NONE', () => {
    expect(() => throwIfError(0, { api: 'Fetch' })).not.toThrow()
    expect(() => throwIfError(ErrorCodes.NOT_COORDINATOR, { api: 'OffsetCommit', groupId: 'g' })).toThrow(ProtocolError)
    try {
      throwIfError(16, { api: 'OffsetCommit', groupId: 'g' })
    } catch (e) {
      expect((e as ProtocolError).type).toBe('NOT_COORDINATOR')
      expect((e as ProtocolError).retriable).toBe(true)
      expect((e as ProtocolError).groupId).toBe('g')
    }
    expect(() => throwIfError(-1)).toThrow(/UNKNOWN_SERVER_ERROR \(-1\)/)
  })
})
