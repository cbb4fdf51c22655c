import { expect, it } from 'vitest'
import { DecodeError, Reader, TidelogError, Writer, apis, type ApiDefinition } from '@tidelog/protocol'
import { fuzz, iterations } from './harness.js'
import { mutate } from './mutate.js'
import { Prng, seedFor } from './prng.js'
import { generate, inRange, loadSpecs, type Generated, type MessageSpec } from './schema.js'

const specs = loadSpecs()
const SEEDS_PER_VERSION = 24
const VALID_PER_VERSION = 40
/** Hostile inputs per decoder (one API, one direction, spread over all its versions). */
const INPUTS_PER_DECODER = 100_000

export type Direction = 'Request' | 'Response'

/**
 * The generated codecs turn any stray exception into DecodeError(`<Message>: <original
 * message>`) as a last line of defence. For the fuzz that net must never catch
 * anything: an error that needed it is a decoder bug, so it is reported as one.
 */
export function typedAndNotWrapped(what: string): (e: unknown) => boolean {
  const prefix = `${what}: `
  return (e) => e instanceof TidelogError && !(e instanceof DecodeError && e.message.startsWith(prefix))
}

function decoderOf(api: ApiDefinition<unknown, unknown>, dir: Direction) {
  return dir === 'Request'
    ? { decode: (r: Reader, v: number) => api.decodeRequest(r, v), encode: (w: Writer, m: unknown, v: number) => api.encodeRequest(w, m, v) }
    : { decode: (r: Reader, v: number) => api.decodeResponse(r, v), encode: (w: Writer, m: unknown, v: number) => api.encodeResponse(w, m, v) }
}

export function versionsOf(api: ApiDefinition<unknown, unknown>, spec: MessageSpec): number[] {
  const out: number[] = []
  for (let v = api.minVersion; v <= api.maxVersion; v++) if (inRange(spec.validVersions, v)) out.push(v)
  return out
}

/**
 * Registers, for every API, a test that checks valid encodings of each version and
 * then feeds INPUTS_PER_DECODER hostile inputs to the `dir` decoder.
 */
export function defineMessageFuzz(dir: Direction): void {
  it(`knows a ${dir.toLowerCase()} definition for every API`, () => {
    expect(apis.size).toBeGreaterThanOrEqual(33)
    for (const api of apis.values()) expect(specs.has(`${api.name}${dir}`), api.name).toBe(true)
  })

  for (const api of apis.values()) {
    const what = `${api.name}${dir}`
    it(`${what} v${api.minVersion}-${api.maxVersion}`, () => {
      const spec = specs.get(what)!
      const { decode, encode } = decoderOf(api, dir)
      const versions = versionsOf(api, spec)
      expect(versions.length).toBe(api.maxVersion - api.minVersion + 1)

      // 1. Valid encodings written from the definitions decode completely and,
      //    when they carry no tagged fields, re-encode to the same bytes.
      const rng = new Prng(seedFor(`${what}/valid`))
      const pool = new Map<number, Generated[]>()
      for (const v of versions) {
        const seeds: Generated[] = []
        for (let i = 0; i < VALID_PER_VERSION; i++) {
          const g = generate(rng, spec, v)
          const r = new Reader(g.bytes)
          let msg: unknown
          try {
            msg = decode(r, v)
          } catch (e) {
            throw new Error(`${what} v${v}: a valid encoding did not decode: ${(e as Error).message}\n${g.bytes.toString('hex')}`, { cause: e })
          }
          expect(r.pos, `${what} v${v} left bytes unread`).toBe(g.bytes.length)
          if (!g.tagged) {
            const w = new Writer(g.bytes.length + 16)
            encode(w, msg, v)
            expect(w.finish().toString('hex'), `${what} v${v} re-encoded differently`).toBe(g.bytes.toString('hex'))
          }
          if (i < SEEDS_PER_VERSION) seeds.push(g)
        }
        pool.set(v, seeds)
      }

      // 2. Hostile inputs: mutations of those encodings (lengths aimed at), and noise.
      let version = versions[0]!
      const stats = fuzz({
        name: `messages/${what}`,
        iterations: iterations(INPUTS_PER_DECODER),
        input(rng) {
          version = rng.pick(versions)
          if (rng.chance(0.08)) return rng.bytes(rng.size(256))
          return mutate(rng, rng.pick(pool.get(version)!))
        },
        run(input) {
          decode(new Reader(input), version)
        },
        allowed: typedAndNotWrapped(what),
      })
      // Both outcomes must be common, or the inputs are not probing the decoder.
      expect(stats.decoded).toBeGreaterThan(stats.inputs / 50)
      expect(stats.rejected).toBeGreaterThan(stats.inputs / 10)
    })
  }
}
