import { readFileSync, readdirSync } from 'node:fs'
import { Writer } from '@tidelog/protocol'
import type { LengthField, Seed } from './mutate.js'
import type { Prng } from './prng.js'

// Valid encodings straight from the message definitions (spec/*.json), written
// byte by byte without going through the codec under test. Mutating these reaches
// deep into every decoder, and knowing where each length sits lets the mutator
// aim at it.

export interface FieldSpec {
  name: string
  type: string
  versions: string
  nullableVersions?: string
  taggedVersions?: string
  tag?: number
  flexibleVersions?: string
  fields?: FieldSpec[]
}

export interface MessageSpec {
  apiKey?: number
  type: string
  name: string
  validVersions: string
  flexibleVersions: string
  fields: FieldSpec[]
  commonStructs?: Array<{ name: string; fields: FieldSpec[] }>
}

const SPEC_DIR = new URL('../../spec/', import.meta.url)

export function loadSpecs(): Map<string, MessageSpec> {
  const out = new Map<string, MessageSpec>()
  for (const f of readdirSync(SPEC_DIR)) {
    if (!f.endsWith('.json')) continue
    const spec = JSON.parse(readFileSync(new URL(f, SPEC_DIR), 'utf8')) as MessageSpec
    out.set(spec.name, spec)
  }
  return out
}

/** Kafka's version-range notation: "none", "3", "3+", "3-7". */
export function inRange(range: string | undefined, v: number): boolean {
  if (range === undefined || range === 'none') return false
  if (range.endsWith('+')) return v >= Number(range.slice(0, -1))
  const dash = range.indexOf('-')
  if (dash < 0) return v === Number(range)
  return v >= Number(range.slice(0, dash)) && v <= Number(range.slice(dash + 1))
}

const PRIMITIVES = new Set(['int8', 'int16', 'uint16', 'int32', 'int64', 'float64', 'bool', 'uuid', 'string', 'bytes', 'records'])

export interface Generated extends Seed {
  /** Whether any tagged field was written (known or unknown); such encodings need not re-encode byte-identically. */
  tagged: boolean
}

/** Writes one valid encoding of `spec` at `version`. */
export function generate(rng: Prng, spec: MessageSpec, version: number): Generated {
  const g = new Gen(rng, spec, version)
  g.struct(spec.fields, 0)
  return { bytes: Buffer.from(g.w.finish()), lengths: g.lengths, tagged: g.tagged }
}

class Gen {
  w = new Writer(256)
  readonly lengths: LengthField[] = []
  tagged = false
  private readonly flexible: boolean
  private readonly common = new Map<string, FieldSpec[]>()

  constructor(
    private readonly rng: Prng,
    spec: MessageSpec,
    private readonly v: number,
  ) {
    this.flexible = inRange(spec.flexibleVersions, v)
    for (const s of spec.commonStructs ?? []) this.common.set(s.name, s.fields)
  }

  struct(fields: readonly FieldSpec[], depth: number): void {
    const v = this.v
    for (const f of fields) {
      if (!inRange(f.versions, v)) continue
      if (this.flexible && inRange(f.taggedVersions, v)) continue
      this.field(f, depth)
    }
    if (!this.flexible) return
    const tagged = fields
      .filter((f) => inRange(f.versions, v) && inRange(f.taggedVersions, v) && this.rng.chance(0.3))
      .sort((a, b) => a.tag! - b.tag!)
    const unknown = this.rng.chance(0.05) ? [{ tag: 200 + this.rng.int(1000), data: this.rng.bytes(this.rng.size(8)) }] : []
    this.w.uvarint(tagged.length + unknown.length)
    for (const f of tagged) {
      this.tagged = true
      this.w.uvarint(f.tag!)
      // The field's size precedes it: write the value aside, then copy it in.
      const outer = this.w
      const mark = this.lengths.length
      this.w = new Writer(64)
      this.field(f, depth)
      const value = this.w.finish()
      this.w = outer
      outer.uvarint(value.length)
      const at = outer.pos
      outer.raw(value)
      for (let i = mark; i < this.lengths.length; i++) {
        const l = this.lengths[i]!
        this.lengths[i] = { ...l, offset: l.offset + at }
      }
    }
    for (const u of unknown) {
      this.tagged = true
      this.w.uvarint(u.tag)
      this.w.uvarint(u.data.length)
      this.w.raw(u.data)
    }
  }

  private compact(f: FieldSpec): boolean {
    return this.flexible && (f.flexibleVersions === undefined || inRange(f.flexibleVersions, this.v))
  }

  private length(n: number, compact: boolean): void {
    const at = this.w.pos
    if (compact) {
      this.w.uvarint(n + 1)
      this.lengths.push({ offset: at, kind: 'uvarint', size: this.w.pos - at })
    } else {
      this.w.int32(n)
      this.lengths.push({ offset: at, kind: 'int32', size: 4 })
    }
  }

  field(f: FieldSpec, depth: number): void {
    const rng = this.rng
    const w = this.w
    const nullable = inRange(f.nullableVersions, this.v)
    const compact = this.compact(f)
    if (f.type.startsWith('[]')) {
      const elem = f.type.slice(2)
      if (nullable && rng.chance(0.15)) {
        const at = w.pos
        if (compact) w.uvarint(0)
        else w.int32(-1)
        this.lengths.push(compact ? { offset: at, kind: 'uvarint', size: 1 } : { offset: at, kind: 'int32', size: 4 })
        return
      }
      const n = rng.int(depth === 0 ? 4 : 3)
      this.length(n, compact)
      for (let i = 0; i < n; i++) {
        if (PRIMITIVES.has(elem)) this.primitive(elem, false, compact)
        else this.struct(f.fields ?? this.common.get(elem)!, depth + 1)
      }
      return
    }
    if (!PRIMITIVES.has(f.type)) {
      const fields = f.fields ?? this.common.get(f.type)
      if (fields === undefined) throw new Error(`unknown type ${f.type} for ${f.name}`)
      if (nullable) {
        // A nullable struct is preceded by an int8: -1 for null, 1 for present.
        if (rng.chance(0.3)) {
          w.int8(-1)
          return
        }
        w.int8(1)
      }
      this.struct(fields, depth + 1)
      return
    }
    this.primitive(f.type, nullable, compact)
  }

  private primitive(type: string, nullable: boolean, compact: boolean): void {
    const rng = this.rng
    const w = this.w
    switch (type) {
      case 'int8':
        w.int8(rng.u32() << 24 >> 24)
        return
      case 'int16':
        w.int16(rng.u32() << 16 >> 16)
        return
      case 'uint16':
        w.uint16(rng.u32() & 0xffff)
        return
      case 'int32':
        w.int32(rng.u32() | 0)
        return
      case 'int64':
        w.int64(BigInt.asIntN(64, (BigInt(rng.u32()) << 32n) | BigInt(rng.u32())))
        return
      case 'float64':
        w.float64((rng.u32() | 0) / 1024)
        return
      case 'bool':
        w.int8(rng.int(2))
        return
      case 'uuid':
        w.raw(rng.bytes(16))
        return
      case 'string': {
        const at = w.pos
        let len = 0
        if (nullable && rng.chance(0.2)) {
          if (compact) w.uvarint(0)
          else w.int16(-1)
        } else {
          const s = 'abcdefghij-._0123456789'.slice(0, rng.size(23))
          len = s.length
          if (compact) w.compactString(s)
          else w.string(s)
        }
        this.lengths.push(compact ? { offset: at, kind: 'uvarint', size: w.pos - at - len } : { offset: at, kind: 'int16', size: 2 })
        return
      }
      default: {
        // bytes and records: the codec hands records on as opaque bytes.
        const at = w.pos
        if (nullable && rng.chance(0.2)) {
          if (compact) w.uvarint(0)
          else w.int32(-1)
          this.lengths.push(compact ? { offset: at, kind: 'uvarint', size: 1 } : { offset: at, kind: 'int32', size: 4 })
        } else {
          const b = rng.bytes(rng.size(40))
          if (compact) w.compactBytes(b)
          else w.bytes(b)
          this.lengths.push(compact ? { offset: at, kind: 'uvarint', size: w.pos - at - b.length } : { offset: at, kind: 'int32', size: 4 })
        }
      }
    }
  }
}
