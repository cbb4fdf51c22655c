/**
 * Parsing and range checks of config values, as Kafka's ConfigDef does them, with its
 * wording: the building blocks of topic-config.ts.
 */
/** Kafka's ConfigDef.Type names, as topic configs use them. */
export type Kind = 'BOOLEAN' | 'STRING' | 'INT' | 'SHORT' | 'LONG' | 'DOUBLE' | 'LIST'

export const INT_MIN = -(2 ** 31)
export const INT_MAX = 2 ** 31 - 1
export const LONG_MIN_BIG = -(2n ** 63n)
export const LONG_MAX_BIG = 2n ** 63n - 1n

export type Parsed = boolean | number | bigint | string | string[]
/** A reason, or the reason with the value Kafka names in place of the whole value. */
export type Complaint = string | { shown: string; reason: string }

export const atLeast = (min: number | bigint) => (v: Parsed) => ((v as number | bigint) < min ? `Value must be at least ${min}` : undefined)
export const between = (min: number, max: number) => (v: Parsed) =>
  (v as number) < min ? `Value must be at least ${min}` : (v as number) > max ? `Value must be no more than ${max}` : undefined
// Kafka's ValidString / ValidList.in; a list names its first element not allowed.
export const oneOf = (values: readonly string[]) => (v: Parsed): Complaint | undefined => {
  const bad = (Array.isArray(v) ? v : [v as string]).find((x) => !values.includes(x))
  return bad === undefined ? undefined : { shown: bad, reason: `String must be one of: ${values.join(', ')}` }
}

// Kafka's ThrottledReplicaListValidator: '*' alone, or partition:broker pairs.
export function throttledReplicas(name: string): (v: Parsed) => string | undefined {
  return (v) => {
    const list = v as string[]
    if (list.every((x) => /^(\d+:\d+)?$/.test(x)) || list.join('').trim() === '*') return undefined
    return `${name} must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...`
  }
}

/** Parses as Kafka's ConfigDef.parseType does (trimmed), or returns its complaint. */
export function parse(type: Kind, raw: string): { value: Parsed } | { error: string } {
  const s = raw.trim()
  switch (type) {
    case 'BOOLEAN': {
      const l = s.toLowerCase()
      if (l === 'true' || l === 'false') return { value: l === 'true' }
      return { error: 'Expected value to be either true or false' }
    }
    case 'INT':
    case 'SHORT': {
      const n = /^[+-]?\d+$/.test(s) ? Number(s) : NaN
      return Number.isInteger(n) && n >= INT_MIN && n <= INT_MAX ? { value: n } : { error: `Not a number of type ${type}` }
    }
    case 'LONG': {
      const n = /^[+-]?\d+$/.test(s) ? BigInt(s) : undefined
      return n !== undefined && n >= LONG_MIN_BIG && n <= LONG_MAX_BIG ? { value: n } : { error: 'Not a number of type LONG' }
    }
    case 'DOUBLE': {
      // Java's Double.parseDouble: decimal or exponent notation, NaN, Infinity, an optional d/f suffix.
      if (!/^[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[dDfF]?)$/.test(s)) return { error: 'Not a number of type DOUBLE' }
      return { value: Number(s.replace(/[dDfF]$/, '')) }
    }
    case 'STRING':
      return { value: s }
    case 'LIST':
      return { value: s === '' ? [] : s.split(/\s*,\s*/) }
  }
}

/** How Kafka prints a parsed value in "Invalid value ..." (a Java List prints as [a, b]). */
export function show(v: Parsed): string {
  return Array.isArray(v) ? `[${v.join(', ')}]` : String(v)
}

/** Type, range and allowed values of one value, in Kafka's words naming `shownName` (ConfigDef.parse then the validator). */
export function parseChecked(def: { type: Kind; validate?: (v: Parsed) => Complaint | undefined }, shownName: string, raw: string): { value: Parsed } | { error: string } {
  const p = parse(def.type, raw)
  if ('error' in p) return { error: `Invalid value ${raw} for configuration ${shownName}: ${p.error}` }
  const why = def.validate?.(p.value)
  if (typeof why === 'string') return { error: `Invalid value ${show(p.value)} for configuration ${shownName}: ${why}` }
  if (why !== undefined) return { error: `Invalid value ${why.shown} for configuration ${shownName}: ${why.reason}` }
  return p
}
