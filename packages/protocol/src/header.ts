import { UnsupportedVersionError } from './errors/base.js'
import { ApiKeys, getApi } from './messages/index.js'
import type { Reader } from './wire/reader.js'
import type { TaggedField } from './wire/types.js'
import { Writer } from './wire/writer.js'

export interface RequestHeader {
  apiKey: number
  apiVersion: number
  correlationId: number
  clientId: string | null
  /** Header tagged fields (header v2); none are defined yet, unknown ones round-trip. */
  _tagged?: TaggedField[]
}

export interface ResponseHeader {
  correlationId: number
  _tagged?: TaggedField[]
}

/**
 * Request header v2 (v1 plus a tagged-field section, KIP-482) from the API's first flexible
 * version on, else v1. Like Kafka's ApiMessageType, only the flexible threshold matters, not
 * the upper bound: a client newer than us sends a v2 header with an ApiVersions version we do
 * not know, and reading it as v2 keeps the body aligned. An unknown api key reads as v1.
 */
export function requestHeaderVersion(apiKey: number, apiVersion: number): 1 | 2 {
  const api = getApi(apiKey)
  return api !== undefined && apiVersion >= api.firstFlexibleVersion ? 2 : 1
}

/**
 * Response header v1 (with tagged fields) for flexible versions, else v0. ApiVersions always
 * answers with v0, so a client can read the answer before it knows what the broker speaks
 * (KIP-511).
 */
export function responseHeaderVersion(apiKey: number, apiVersion: number): 0 | 1 {
  if (apiKey === ApiKeys.ApiVersions) return 0
  const api = getApi(apiKey)
  return api !== undefined && apiVersion >= api.firstFlexibleVersion ? 1 : 0
}

/**
 * Writes the header into `w`. The client id always uses the classic int16-length form, even
 * in header v2, so that a broker can read the header of any ApiVersions request.
 */
export function writeRequestHeader(w: Writer, header: RequestHeader): void {
  w.int16(header.apiKey)
  w.int16(header.apiVersion)
  w.int32(header.correlationId)
  w.nullableString(header.clientId)
  if (requestHeaderVersion(header.apiKey, header.apiVersion) === 2) w.taggedFields(header._tagged)
}

/** A size-prefixed request: header and body written once into one buffer, the size patched in. */
export function encodeRequestFrame(header: RequestHeader, body: unknown): Buffer {
  const api = getApi(header.apiKey)
  if (api === undefined) throw new UnsupportedVersionError(`api ${header.apiKey}`, header.apiKey, header.apiVersion)
  const w = new Writer(512)
  const at = w.reserveInt32()
  writeRequestHeader(w, header)
  api.encodeRequest(w, body, header.apiVersion)
  w.patchInt32(at, w.pos - at - 4)
  return w.finish()
}

/**
 * Reads a request header (after the frame's size). The api key and version come first in
 * every header version, so they pick how the rest is read; an unknown api key reads as v1 so
 * the broker can still answer with the correlation id.
 */
export function decodeRequestHeader(r: Reader): RequestHeader {
  const apiKey = r.int16()
  const apiVersion = r.int16()
  const correlationId = r.int32()
  const clientId = r.nullableString()
  const header: RequestHeader = { apiKey, apiVersion, correlationId, clientId }
  if (requestHeaderVersion(apiKey, apiVersion) === 2) {
    const tagged = r.taggedFields()
    if (tagged !== undefined) header._tagged = tagged
  }
  return header
}

/** A size-prefixed response: correlation id, tagged fields for header v1, then the body. */
export function encodeResponseFrame(apiKey: number, apiVersion: number, correlationId: number, body: unknown): Buffer {
  const api = getApi(apiKey)
  if (api === undefined) throw new UnsupportedVersionError(`api ${apiKey}`, apiKey, apiVersion)
  const w = new Writer(512)
  const at = w.reserveInt32()
  w.int32(correlationId)
  if (responseHeaderVersion(apiKey, apiVersion) === 1) w.uvarint(0)
  api.encodeResponse(w, body, apiVersion)
  w.patchInt32(at, w.pos - at - 4)
  return w.finish()
}

export function decodeResponseHeader(r: Reader, apiKey: number, apiVersion: number): ResponseHeader {
  const correlationId = r.int32()
  const header: ResponseHeader = { correlationId }
  if (responseHeaderVersion(apiKey, apiVersion) === 1) {
    const tagged = r.taggedFields()
    if (tagged !== undefined) header._tagged = tagged
  }
  return header
}
