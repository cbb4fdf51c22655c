import { UsageError } from './errors.js'

export interface OptionSpec {
  /** Long name without the dashes. */
  name: string
  short?: string
  /** 'flag' takes no value; 'value' takes the next argument verbatim (so `--offset -5` works); 'list' repeats. */
  kind: 'flag' | 'value' | 'list'
  /** The value's placeholder in help, e.g. 'N'. */
  arg?: string
  help: string
}

/** `--json`, which every listing command takes. */
export const JSON_FLAG: OptionSpec = { name: 'json', kind: 'flag', help: 'print JSON instead of text' }

export interface Parsed {
  positionals: string[]
  flags: Set<string>
  values: Map<string, string>
  lists: Map<string, string[]>
}

/**
 * getopt-like parsing: long options as `--name value` or `--name=value`, short ones as
 * `-x value`, flags clustered (`-qv`), `--` ends options. A value option always takes the
 * next argument, even one starting with a dash (node:util's parseArgs refuses `--offset -5`).
 */
export function parseArgs(argv: readonly string[], specs: readonly OptionSpec[]): Parsed {
  const byLong = new Map(specs.map((s) => [s.name, s]))
  const byShort = new Map(specs.filter((s) => s.short !== undefined).map((s) => [s.short!, s]))
  const out: Parsed = { positionals: [], flags: new Set(), values: new Map(), lists: new Map() }
  const set = (spec: OptionSpec, value: string | undefined, shown: string): void => {
    if (spec.kind === 'flag') {
      if (value !== undefined) throw new UsageError(`option ${shown} takes no value`)
      out.flags.add(spec.name)
      return
    }
    if (value === undefined) throw new UsageError(`option ${shown} needs a value${spec.arg === undefined ? '' : ` (${spec.arg})`}`)
    if (spec.kind === 'list') out.lists.set(spec.name, [...(out.lists.get(spec.name) ?? []), value])
    else out.values.set(spec.name, value)
  }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === '--') {
      out.positionals.push(...argv.slice(i + 1))
      break
    }
    if (a.startsWith('--')) {
      const eq = a.indexOf('=')
      const name = eq < 0 ? a.slice(2) : a.slice(2, eq)
      const spec = byLong.get(name)
      if (spec === undefined) throw new UsageError(`unknown option --${name}`)
      const value = eq >= 0 ? a.slice(eq + 1) : spec.kind === 'flag' ? undefined : argv[++i]
      set(spec, value, `--${name}`)
      continue
    }
    if (a.startsWith('-') && a.length > 1 && !/^-\d/.test(a)) {
      for (let j = 1; j < a.length; j++) {
        const spec = byShort.get(a[j]!)
        if (spec === undefined) throw new UsageError(`unknown option -${a[j]}`)
        if (spec.kind === 'flag') {
          set(spec, undefined, `-${a[j]}`)
          continue
        }
        const rest = a.slice(j + 1)
        set(spec, rest !== '' ? rest : argv[++i], `-${a[j]}`)
        break
      }
      continue
    }
    out.positionals.push(a)
  }
  return out
}

export function intValue(p: Parsed, name: string, options: { min?: number; max?: number } = {}): number | undefined {
  const v = p.values.get(name)
  if (v === undefined) return undefined
  return parseInteger(v, `--${name}`, options)
}

export function parseInteger(v: string, what: string, { min = -Infinity, max = Infinity }: { min?: number; max?: number } = {}): number {
  const n = Number(v)
  if (!/^-?\d+$/.test(v.trim()) || !Number.isSafeInteger(n)) throw new UsageError(`${what} must be an integer, got ${JSON.stringify(v)}`)
  if (n < min || n > max) throw new UsageError(`${what} must be ${max === Infinity ? `at least ${min}` : `between ${min} and ${max}`}, got ${n}`)
  return n
}

export function parseBigInt(v: string, what: string): bigint {
  if (!/^-?\d+$/.test(v.trim())) throw new UsageError(`${what} must be an integer, got ${JSON.stringify(v)}`)
  return BigInt(v.trim())
}

/** `k=v` pairs from repeated options, each possibly comma-separated (Kafka's `--add-config a=1,b=2`). */
export function keyValues(items: readonly string[], what: string, splitCommas = false): Record<string, string> {
  const out: Record<string, string> = {}
  for (const item of items) {
    for (const kv of splitCommas ? splitConfigList(item) : [item]) {
      const eq = kv.indexOf('=')
      if (eq <= 0) throw new UsageError(`${what} expects key=value, got ${JSON.stringify(kv)}`)
      out[kv.slice(0, eq).trim()] = kv.slice(eq + 1)
    }
  }
  return out
}

// Kafka's kafka-configs.sh groups a list value in square brackets: `a=[x,y],b=1`.
function splitConfigList(s: string): string[] {
  const parts: string[] = []
  let depth = 0
  let cur = ''
  for (const ch of s) {
    if (ch === '[') depth++
    if (ch === ']') depth--
    if (ch === ',' && depth === 0) {
      parts.push(cur)
      cur = ''
    } else cur += ch
  }
  if (cur !== '') parts.push(cur)
  return parts.map((p) => p.replace(/=\[(.*)\]$/, '=$1'))
}

/** Refuses options from `specs` that this command does not combine. */
export function exclusive(p: Parsed, names: readonly string[]): string | undefined {
  const given = names.filter((n) => p.flags.has(n) || p.values.has(n) || p.lists.has(n))
  if (given.length > 1) throw new UsageError(`options ${given.map((n) => `--${n}`).join(' and ')} cannot be combined`)
  return given[0]
}
