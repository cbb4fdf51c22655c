import { describe, expect, it } from 'vitest'
import {
  ApiKeys,
  ApiVersions,
  decodeRequestHeader,
  decodeResponseHeader,
  DecodeError,
  encodeRequestFrame,
  encodeResponseFrame,
  Metadata,
  Produce,
  Reader,
  requestHeaderVersion,
  responseHeaderVersion,
  UnsupportedVersionError,
} from '@tidelog/protocol'

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex')

describe('header versions', () => {
  it('request header v2 from the first flexible version, v1 before', () => {
    expect(requestHeaderVersion(ApiKeys.Produce, 8)).toBe(1)
    expect(requestHeaderVersion(ApiKeys.Produce, 9)).toBe(2)
    expect(requestHeaderVersion(ApiKeys.Metadata, 9)).toBe(2)
    expect(requestHeaderVersion(ApiKeys.SaslHandshake, 1)).toBe(1)
    expect(requestHeaderVersion(ApiKeys.DescribeCluster, 0)).toBe(2)
    expect(requestHeaderVersion(ApiKeys.ApiVersions, 2)).toBe(1)
    expect(requestHeaderVersion(ApiKeys.ApiVersions, 3)).toBe(2)
  })

  it('a newer ApiVersions request than we know still reads as v2, as Kafka reads it', () => {
    expect(requestHeaderVersion(ApiKeys.ApiVersions, 9)).toBe(2)
  })

  it('an unknown api key reads as v1', () => {
    expect(requestHeaderVersion(9999, 0)).toBe(1)
    expect(responseHeaderVersion(9999, 0)).toBe(0)
  })

  it('response header v1 for flexible versions, but always v0 for ApiVersions', () => {
    expect(responseHeaderVersion(ApiKeys.Metadata, 8)).toBe(0)
    expect(responseHeaderVersion(ApiKeys.Metadata, 9)).toBe(1)
    expect(responseHeaderVersion(ApiKeys.ApiVersions, 3)).toBe(0)
    expect(responseHeaderVersion(ApiKeys.ApiVersions, 4)).toBe(0)
    expect(responseHeaderVersion(ApiKeys.OffsetDelete, 0)).toBe(0)
  })
})

describe('request frames', () => {
  it('non-flexible: size, header v1 (no tagged fields), body', () => {
    const frame = encodeRequestFrame({ apiKey: 3, apiVersion: 1, correlationId: 7, clientId: 'ab' }, { topics: null })
    expect(frame).toEqual(hex('00000010 0003 0001 00000007 0002 6162 ffffffff'))
  })

  it('flexible: the client id keeps its int16 length, then the tagged section', () => {
    const frame = encodeRequestFrame(
      { apiKey: 18, apiVersion: 3, correlationId: 1, clientId: 'c' },
      { clientSoftwareName: 'x', clientSoftwareVersion: '1' },
    )
    expect(frame).toEqual(hex('00000011 0012 0003 00000001 0001 63 00 02 78 02 31 00'))
  })

  it('null client id is int16 -1', () => {
    const frame = encodeRequestFrame({ apiKey: 12, apiVersion: 0, correlationId: 2, clientId: null }, {
      groupId: 'g',
      generationId: 1,
      memberId: '',
    })
    expect(frame.subarray(4, 14)).toEqual(hex('000c 0000 00000002 ffff'))
    const h = decodeRequestHeader(new Reader(frame, 4))
    expect(h).toEqual({ apiKey: 12, apiVersion: 0, correlationId: 2, clientId: null })
  })

  it('decodes what it encodes, header then body, tagged header fields kept', () => {
    const header = {
      apiKey: ApiKeys.Metadata,
      apiVersion: 12,
      correlationId: 99,
      clientId: 'client-1',
      _tagged: [{ tag: 3, data: Buffer.from([1, 2]) }],
    }
    const body = { topics: [{ topicId: 'AAAAAAAAAAAAAAAAAAAAAQ', name: 'events' }], allowAutoTopicCreation: false, includeTopicAuthorizedOperations: true }
    const frame = encodeRequestFrame(header, body)
    expect(frame.readInt32BE(0)).toBe(frame.length - 4)
    const r = new Reader(frame, 4)
    expect(decodeRequestHeader(r)).toEqual(header)
    expect(Metadata.decodeRequest(r, 12)).toEqual({ ...body, includeClusterAuthorizedOperations: false })
    expect(r.remaining).toBe(0)
  })

  it('reads an unknown api key as header v1 so the broker can still answer', () => {
    const bytes = hex('03e7 0005 0000002a 0003 636c69 deadbeef')
    const r = new Reader(bytes)
    expect(decodeRequestHeader(r)).toEqual({ apiKey: 999, apiVersion: 5, correlationId: 42, clientId: 'cli' })
    expect(r.remaining).toBe(4)
  })

  it('refuses to encode an unknown api or version', () => {
    expect(() => encodeRequestFrame({ apiKey: 4, apiVersion: 0, correlationId: 0, clientId: null }, {})).toThrow(UnsupportedVersionError)
    expect(() => encodeRequestFrame({ apiKey: 0, apiVersion: 13, correlationId: 0, clientId: null }, {})).toThrow(UnsupportedVersionError)
  })

  it('a truncated header is a DecodeError', () => {
    expect(() => decodeRequestHeader(new Reader(hex('0000 0009 0000')))).toThrow(DecodeError)
    expect(() => decodeRequestHeader(new Reader(hex('0000 0009 00000001 ffff')))).toThrow(DecodeError)
  })
})

describe('response frames', () => {
  it('header v0: correlation id only', () => {
    const frame = encodeResponseFrame(ApiKeys.Produce, 8, 5, { responses: [], throttleTimeMs: 0 })
    expect(frame).toEqual(hex('0000000c 00000005 00000000 00000000'))
    const r = new Reader(frame, 4)
    expect(decodeResponseHeader(r, ApiKeys.Produce, 8)).toEqual({ correlationId: 5 })
    expect(Produce.decodeResponse(r, 8).responses).toEqual([])
  })

  it('header v1: correlation id and a tagged section', () => {
    const frame = encodeResponseFrame(ApiKeys.Heartbeat, 4, 6, { throttleTimeMs: 1, errorCode: 0 })
    expect(frame).toEqual(hex('0000000c 00000006 00 00000001 0000 00'))
    const r = new Reader(frame, 4)
    expect(decodeResponseHeader(r, ApiKeys.Heartbeat, 4)).toEqual({ correlationId: 6 })
  })

  it('ApiVersions answers on header v0 even in its flexible versions', () => {
    const frame = encodeResponseFrame(ApiKeys.ApiVersions, 3, 1, {
      errorCode: 0,
      apiKeys: [{ apiKey: 18, minVersion: 0, maxVersion: 4 }],
      throttleTimeMs: 0,
    })
    expect(frame).toEqual(hex('00000013 00000001 0000 02 0012 0000 0004 00 00000000 00'))
    const r = new Reader(frame, 4)
    expect(decodeResponseHeader(r, ApiKeys.ApiVersions, 3)).toEqual({ correlationId: 1 })
    expect(ApiVersions.decodeResponse(r, 3).apiKeys).toEqual([{ apiKey: 18, minVersion: 0, maxVersion: 4 }])
  })

  it('keeps unknown tagged fields of a v1 response header', () => {
    const r = new Reader(hex('00000009 01 05 01 ff'))
    expect(decodeResponseHeader(r, ApiKeys.Metadata, 12)).toEqual({ correlationId: 9, _tagged: [{ tag: 5, data: hex('ff') }] })
  })
})
