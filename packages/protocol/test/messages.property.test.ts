/**
 * decode(encode(x, v), v) equals x for every API, version and direction, with x drawn from
 * arbitraries built here from spec/*.json (independently of the generator's own reading of
 * it): values only where the version has the field, null only where the version allows it,
 * defaults elsewhere, random unknown tagged fields in flexible versions.
 */
import { readFileSync, readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  apis,
  decodeConsumerProtocolAssignment,
  decodeConsumerProtocolSubscription,
  DecodeError,
  encodeConsumerProtocolAssignment,
  encodeConsumerProtocolSubscription,
  Reader,
  Writer,
  ZERO_UUID,
  type ApiDefinition,
} from '@tidelog/protocol'

interface FieldSpec {
  name: string
  type: string
  versions: string
  nullableVersions?: string
  tag?: number
  default?: string | number | boolean
  fields?: FieldSpec[]
}
interface MessageSpec {
  name: string
  type: string
  apiKey?: number
  validVersions: string
  flexibleVersions: string
  fields: FieldSpec[]
  commonStructs?: { name: string; fields: FieldSpec[] }[]
}

const SPEC_DIR = fileURLToPath(new URL('../spec/', import.meta.url))
const specs = new Map<string, MessageSpec>()
for (const f of readdirSync(SPEC_DIR).filter((n) => n.endsWith('.json'))) {
  const s = JSON.parse(readFileSync(SPEC_DIR + f, 'utf8')) as MessageSpec
  specs.set(s.name, s)
}

function inRange(s: string | undefined, v: number): boolean {
  if (s === undefined || s === 'none') return false
  if (s.endsWith('+')) return v >= Number(s.slice(0, -1))
  const [lo, hi] = s.split('-').map(Number)
  return v >= lo! && v <= (hi ?? lo)!
}

function versionsOf(s: string): number[] {
  const [lo, hi] = s.split('-').map(Number)
  const out: number[] = []
  for (let v = lo!; v <= (hi ?? lo)!; v++) out.push(v)
  return out
}

const camel = (n: string): string => n[0]!.toLowerCase() + n.slice(1)

class Schema {
  readonly structs = new Map<string, FieldSpec[]>()
  constructor(readonly spec: MessageSpec) {
    for (const c of spec.commonStructs ?? []) {
      this.structs.set(c.name, c.fields)
      this.collect(c.fields)
    }
    this.collect(spec.fields)
  }
  private collect(fields: FieldSpec[]): void {
    for (const f of fields) {
      if (f.fields !== undefined) {
        this.structs.set(f.type.replace('[]', ''), f.fields)
        this.collect(f.fields)
      }
    }
  }
  flexible(v: number): boolean {
    return inRange(this.spec.flexibleVersions, v)
  }
  isStruct(t: string): boolean {
    return this.structs.has(t)
  }

  /** The value decode produces for a field the version lacks (Java's defaults). */
  defaultOf(f: FieldSpec): unknown {
    const d = f.default === undefined ? undefined : String(f.default)
    if (d === 'null' || f.type === 'records') return null
    if (f.type.startsWith('[]')) return []
    if (this.isStruct(f.type)) {
      const o: Record<string, unknown> = {}
      for (const sf of this.structs.get(f.type)!) o[camel(sf.name)] = this.defaultOf(sf)
      return o
    }
    switch (f.type) {
      case 'int64':
        return BigInt(d ?? 0)
      case 'bool':
        return d === 'true'
      case 'string':
        return d ?? ''
      case 'bytes':
        return Buffer.alloc(0)
      case 'uuid':
        return ZERO_UUID
      default:
        return d === undefined ? 0 : d.startsWith('0x') ? parseInt(d, 16) : Number(d)
    }
  }

  prim(t: string): fc.Arbitrary<unknown> {
    switch (t) {
      case 'int8':
        return fc.integer({ min: -128, max: 127 })
      case 'int16':
        return fc.integer({ min: -32768, max: 32767 })
      case 'uint16':
        return fc.integer({ min: 0, max: 65535 })
      case 'int32':
        return fc.integer()
      case 'int64':
        return fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })
      case 'float64':
        return fc.double()
      case 'bool':
        return fc.boolean()
      case 'string':
        return fc.string({ unit: 'grapheme', maxLength: 6 })
      case 'bytes':
      case 'records':
        return fc.uint8Array({ maxLength: 12 }).map((b) => Buffer.from(b))
      case 'uuid':
        return fc.uint8Array({ minLength: 16, maxLength: 16 }).map((b) => Buffer.from(b).toString('base64url'))
    }
    throw new Error(`unknown type ${t}`)
  }

  value(f: FieldSpec, v: number, depth: number): fc.Arbitrary<unknown> {
    let arb: fc.Arbitrary<unknown>
    if (f.type.startsWith('[]')) {
      const e = f.type.slice(2)
      const elem = this.isStruct(e) ? this.struct(e, this.structs.get(e)!, v, depth + 1) : this.prim(e)
      arb = fc.array(elem, { maxLength: depth === 0 ? 3 : 2 })
    } else if (this.isStruct(f.type)) {
      arb = this.struct(f.type, this.structs.get(f.type)!, v, depth + 1)
    } else {
      arb = this.prim(f.type)
    }
    return inRange(f.nullableVersions, v) ? fc.option(arb, { nil: null, freq: 4 }) : arb
  }

  struct(name: string, fields: FieldSpec[], v: number, depth: number): fc.Arbitrary<Record<string, unknown>> {
    const props: Record<string, fc.Arbitrary<unknown>> = {}
    for (const f of fields) {
      props[camel(f.name)] = inRange(f.versions, v) ? this.value(f, v, depth) : fc.constant(this.defaultOf(f))
    }
    const record = fc.record(props)
    if (!this.flexible(v)) return record
    // Unknown tags must not collide with the tags this struct knows in this version.
    const known = new Set(fields.filter((f) => f.tag !== undefined && inRange(f.versions, v)).map((f) => f.tag))
    const free = Array.from({ length: 12 }, (_, i) => i).filter((t) => !known.has(t))
    const unknown = fc
      .uniqueArray(fc.record({ tag: fc.constantFrom(...free, 1000, 70000), data: fc.uint8Array({ maxLength: 5 }).map((b) => Buffer.from(b)) }), {
        selector: (t) => t.tag,
        maxLength: 2,
      })
      .map((ts) => ts.sort((a, b) => a.tag - b.tag))
    return fc.tuple(record, fc.option(unknown, { nil: undefined, freq: 2 })).map(([o, t]) => {
      void name
      return t === undefined || t.length === 0 ? o : { ...o, _tagged: t }
    })
  }

  /** The same message with every field the version lacks left out (the optional properties). */
  strip(fields: FieldSpec[], x: Record<string, unknown>, v: number): Record<string, unknown> {
    const out: Record<string, unknown> = { ...x }
    for (const f of fields) {
      const p = camel(f.name)
      if (!inRange(f.versions, v)) {
        delete out[p]
        continue
      }
      const val = out[p]
      const e = f.type.replace('[]', '')
      if (!this.isStruct(e) || val === null) continue
      const sf = this.structs.get(e)!
      out[p] = Array.isArray(val)
        ? val.map((i) => this.strip(sf, i as Record<string, unknown>, v))
        : this.strip(sf, val as Record<string, unknown>, v)
    }
    return out
  }
}

type Codec = {
  encode: (w: Writer, x: unknown, v: number) => void
  decode: (r: Reader, v: number) => unknown
}

function roundTrip(schema: Schema, codec: Codec, v: number, numRuns: number): void {
  const arb = schema.struct(schema.spec.name, schema.spec.fields, v, 0)
  fc.assert(
    fc.property(arb, fc.nat(), (x, cut) => {
      const w = new Writer(16)
      codec.encode(w, x, v)
      const bytes = Buffer.from(w.finish())
      const r = new Reader(bytes)
      const y = codec.decode(r, v)
      expect(r.remaining).toBe(0)
      expect(y).toEqual(x)

      // Encoding what was decoded gives the same bytes.
      const w2 = new Writer(16)
      codec.encode(w2, y, v)
      expect(w2.finish().equals(bytes)).toBe(true)

      // Fields the version lacks may be left out entirely.
      const w3 = new Writer(16)
      codec.encode(w3, schema.strip(schema.spec.fields, x, v), v)
      expect(w3.finish().equals(bytes)).toBe(true)

      // Any strict prefix is a typed decode error, never a partial message.
      if (bytes.length > 0) {
        const prefix = bytes.subarray(0, cut % bytes.length)
        expect(() => codec.decode(new Reader(prefix), v)).toThrow(DecodeError)
      }
    }),
    { numRuns },
  )
}

const RUNS = Number(process.env.TIDELOG_PROPERTY_RUNS ?? 100)

for (const def of [...apis.values()].sort((a, b) => a.apiKey - b.apiKey) as ApiDefinition<unknown, unknown>[]) {
  const req = new Schema(specs.get(`${def.name}Request`)!)
  const res = new Schema(specs.get(`${def.name}Response`)!)
  describe(`${def.name} (key ${def.apiKey}) round-trips`, () => {
    it('covers every version the spec lists as valid', () => {
      const vs = versionsOf(req.spec.validVersions)
      expect([def.minVersion, def.maxVersion]).toEqual([vs[0], vs[vs.length - 1]])
    })
    for (const v of versionsOf(req.spec.validVersions)) {
      it(`request v${v}`, () => {
        roundTrip(req, { encode: (w, x, ver) => def.encodeRequest(w, x, ver), decode: (r, ver) => def.decodeRequest(r, ver) }, v, RUNS)
      })
      it(`response v${v}`, () => {
        roundTrip(res, { encode: (w, x, ver) => def.encodeResponse(w, x, ver), decode: (r, ver) => def.decodeResponse(r, ver) }, v, RUNS)
      })
    }
  })
}

describe('consumer protocol round-trips', () => {
  const cases = [
    {
      schema: new Schema(specs.get('ConsumerProtocolSubscription')!),
      encode: encodeConsumerProtocolSubscription as (x: never, v: number) => Buffer,
      decode: decodeConsumerProtocolSubscription as (b: Uint8Array) => { version: number },
    },
    {
      schema: new Schema(specs.get('ConsumerProtocolAssignment')!),
      encode: encodeConsumerProtocolAssignment as (x: never, v: number) => Buffer,
      decode: decodeConsumerProtocolAssignment as (b: Uint8Array) => { version: number },
    },
  ]
  for (const { schema, encode, decode } of cases) {
    for (const v of versionsOf(schema.spec.validVersions)) {
      it(`${schema.spec.name} v${v}`, () => {
        fc.assert(
          fc.property(schema.struct(schema.spec.name, schema.spec.fields, v, 0), (x) => {
            const bytes = encode(x as never, v)
            expect(bytes.readInt16BE(0)).toBe(v)
            expect(decode(bytes)).toEqual({ ...x, version: v })
          }),
          { numRuns: 50 },
        )
      })
    }
  }
})
