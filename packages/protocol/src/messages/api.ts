import type { Reader } from '../wire/reader.js'
import type { Writer } from '../wire/writer.js'

/**
 * One Kafka API: its key, the versions this codec speaks, and the request and response
 * codecs. The generated files (NN-name.ts) each export one of these.
 */
export interface ApiDefinition<Req, Res> {
  readonly apiKey: number
  /** Kafka's name for the API, e.g. 'Produce'. */
  readonly name: string
  readonly minVersion: number
  readonly maxVersion: number
  /** First version using compact encodings and tagged fields (KIP-482); Infinity when never flexible. */
  readonly firstFlexibleVersion: number
  encodeRequest(w: Writer, msg: Req, version: number): void
  decodeRequest(r: Reader, version: number): Req
  encodeResponse(w: Writer, msg: Res, version: number): void
  decodeResponse(r: Reader, version: number): Res
}
