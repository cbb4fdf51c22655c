import { afterAll, describe, expect, it } from 'vitest'
import {
  DecodeError,
  Reader,
  TidelogError,
  Writer,
  apis,
  decodeConsumerProtocolAssignment,
  decodeConsumerProtocolSubscription,
  decodeRequestHeader,
  decodeResponseHeader,
  getApi,
  requestHeaderVersion,
  responseHeaderVersion,
  type ApiDefinition,
} from '@tidelog/protocol'
import { fuzz, iterations, watchdog } from './harness.js'
import { typedAndNotWrapped, versionsOf } from './messages.js'
import { mutate, type LengthField, type Seed } from './mutate.js'
import { Prng, seedFor } from './prng.js'
import { generate, loadSpecs } from './schema.js'

afterAll(() => watchdog.stop())

const specs = loadSpecs()
const apiList = [...apis.values()] as ApiDefinition<unknown, unknown>[]

/** Whether an error is typed and was not produced by a codec's catch-all wrapper. */
function acceptable(e: unknown, api: ApiDefinition<unknown, unknown> | undefined, dir: 'Request' | 'Response'): boolean {
  if (!(e instanceof TidelogError)) return false
  return api === undefined || typedAndNotWrapped(`${api.name}${dir}`)(e)
}

/** A request as the broker receives it after the frame: header v1/v2, then the body. */
function requestSeed(rng: Prng): Seed {
  const api = rng.pick(apiList)
  const versions = versionsOf(api, specs.get(`${api.name}Request`)!)
  // Now and then a version or api key the codec does not know, as a newer client would send.
  const version = rng.chance(0.05) ? api.maxVersion + 1 : rng.pick(versions)
  const apiKey = rng.chance(0.02) ? 1000 + rng.int(100) : api.apiKey
  const w = new Writer(64)
  const lengths: LengthField[] = []
  w.int16(apiKey).int16(version).int32(rng.u32() | 0)
  lengths.push({ offset: w.pos, kind: 'int16', size: 2 })
  w.nullableString(rng.chance(0.1) ? null : 'client-'.slice(0, rng.int(8)))
  if (requestHeaderVersion(apiKey, version) === 2) w.uvarint(0)
  const head = Buffer.from(w.finish())
  if (apiKey !== api.apiKey || version > api.maxVersion) return { bytes: Buffer.concat([head, rng.bytes(rng.size(64))]), lengths }
  const body = generate(rng, specs.get(`${api.name}Request`)!, version)
  for (const l of body.lengths) lengths.push({ ...l, offset: l.offset + head.length })
  return { bytes: Buffer.concat([head, body.bytes]), lengths }
}

/** Version prefix + body; sometimes a newer version than the body (a newer peer), so not always valid. */
function consumerSeed(rng: Prng, name: 'ConsumerProtocolSubscription' | 'ConsumerProtocolAssignment'): Seed & { valid: boolean } {
  const version = rng.int(4)
  const body = generate(rng, specs.get(name)!, version)
  const prefix = Buffer.alloc(2)
  const valid = !rng.chance(0.1)
  prefix.writeInt16BE(valid ? version : version + 1 + rng.int(5), 0)
  return { bytes: Buffer.concat([prefix, body.bytes]), lengths: body.lengths.map((l) => ({ ...l, offset: l.offset + 2 })), valid }
}

describe('fuzz: whole frames as the broker and the client read them', () => {
  it('request header + body for every API', () => {
    const rng = new Prng(seedFor('frames/request/pool'))
    const pool = Array.from({ length: 2000 }, () => requestSeed(rng))
    let api: ApiDefinition<unknown, unknown> | undefined
    const stats = fuzz({
      name: 'frames/request',
      iterations: iterations(100_000),
      input: (rng) => (rng.chance(0.05) ? rng.bytes(rng.size(128)) : mutate(rng, rng.pick(pool))),
      run(input) {
        api = undefined
        const r = new Reader(input)
        const header = decodeRequestHeader(r)
        api = getApi(header.apiKey)
        if (api !== undefined) api.decodeRequest(r, header.apiVersion)
      },
      allowed: (e) => acceptable(e, api, 'Request'),
    })
    expect(stats.decoded).toBeGreaterThan(stats.inputs / 50)
    expect(stats.rejected).toBeGreaterThan(stats.inputs / 10)
  })

  it('response header + body for every API', () => {
    const rng = new Prng(seedFor('frames/response/pool'))
    // The client knows which api and version it asked for; the bytes are the broker's.
    const pool = Array.from({ length: 2000 }, () => {
      const api = rng.pick(apiList)
      const version = rng.pick(versionsOf(api, specs.get(`${api.name}Response`)!))
      const w = new Writer(16)
      w.int32(rng.u32() | 0)
      if (responseHeaderVersion(api.apiKey, version) === 1) w.uvarint(0)
      const head = Buffer.from(w.finish())
      const body = generate(rng, specs.get(`${api.name}Response`)!, version)
      const seed: Seed = { bytes: Buffer.concat([head, body.bytes]), lengths: body.lengths.map((l) => ({ ...l, offset: l.offset + head.length })) }
      return { api, version, seed }
    })
    let current = pool[0]!
    const stats = fuzz({
      name: 'frames/response',
      iterations: iterations(100_000),
      input(rng) {
        current = rng.pick(pool)
        return rng.chance(0.05) ? rng.bytes(rng.size(128)) : mutate(rng, current.seed)
      },
      run(input) {
        const r = new Reader(input)
        decodeResponseHeader(r, current.api.apiKey, current.version)
        current.api.decodeResponse(r, current.version)
      },
      allowed: (e) => acceptable(e, current.api, 'Response'),
    })
    expect(stats.decoded).toBeGreaterThan(stats.inputs / 50)
    expect(stats.rejected).toBeGreaterThan(stats.inputs / 10)
  })

  for (const name of ['ConsumerProtocolSubscription', 'ConsumerProtocolAssignment'] as const) {
    it(`${name} (inside JoinGroup / SyncGroup), every version`, () => {
      const decode = name === 'ConsumerProtocolSubscription' ? decodeConsumerProtocolSubscription : decodeConsumerProtocolAssignment
      const rng = new Prng(seedFor(`frames/${name}/pool`))
      const pool = Array.from({ length: 400 }, () => consumerSeed(rng, name))
      for (const s of pool) if (s.valid) expect(decode(s.bytes).version).toBe(s.bytes.readInt16BE(0))
      const stats = fuzz({
        name: `frames/${name}`,
        iterations: iterations(100_000),
        input: (rng) => (rng.chance(0.05) ? rng.bytes(rng.size(128)) : mutate(rng, rng.pick(pool))),
        run(input) {
          decode(input)
        },
        allowed: typedAndNotWrapped(name),
      })
      expect(stats.decoded).toBeGreaterThan(stats.inputs / 50)
      expect(stats.rejected).toBeGreaterThan(stats.inputs / 10)
    })
  }

  it('treats a codec catch-all DecodeError as a failure, and real ones as fine', () => {
    const check = typedAndNotWrapped('FetchRequest')
    expect(check(new DecodeError('FetchRequest: Cannot read properties of undefined', 7))).toBe(false)
    expect(check(new DecodeError('truncated int32', 7, 4, 1))).toBe(true)
    expect(check(new TypeError('x'))).toBe(false)
  })
})
