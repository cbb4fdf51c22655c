import type { BrokerConfig } from './config.js'

// How one raw input (a flag, an environment variable, a config-file entry) becomes
// a typed value; the option table itself stays in config.ts, the one place that
// says which inputs exist.

/** A wrong flag, environment variable, config-file entry or value. The CLI exits 2 on it. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ConfigError'
  }
}

export type Kind =
  | { type: 'string'; nonEmpty?: boolean }
  | { type: 'int'; min: number; max: number; infinite?: 'max' | 'minusOne' }
  | { type: 'bool' }
  | { type: 'enum'; values: readonly string[] }

export interface OptionSpec {
  key: keyof BrokerConfig
  flag: string
  env: string
  kind: Kind
  help: string
  /** What --help prints as the default, when the value alone would mislead. */
  defaultText?: string
}

export function parseValue(spec: OptionSpec, raw: unknown, source: string): unknown {
  const where = `${source}: `
  const k = spec.kind
  switch (k.type) {
    case 'string': {
      if (typeof raw !== 'string') throw new ConfigError(`${where}expected a string, got ${JSON.stringify(raw)}`)
      if (k.nonEmpty === true && raw.trim() === '') throw new ConfigError(`${where}must not be empty`)
      return raw
    }
    case 'bool': {
      if (typeof raw === 'boolean') return raw
      if (typeof raw === 'string') {
        const s = raw.trim().toLowerCase()
        if (s === 'true' || s === '1' || s === 'yes') return true
        if (s === 'false' || s === '0' || s === 'no') return false
      }
      throw new ConfigError(`${where}expected true or false, got ${JSON.stringify(raw)}`)
    }
    case 'enum': {
      if (typeof raw === 'string' && k.values.includes(raw)) return raw
      throw new ConfigError(`${where}expected one of ${k.values.join(', ')}, got ${JSON.stringify(raw)}`)
    }
    case 'int': {
      let n: number
      if (typeof raw === 'number') n = raw
      else if (typeof raw === 'string' && /^\s*-?\d+\s*$/.test(raw)) n = Number(raw)
      else throw new ConfigError(`${where}expected an integer, got ${JSON.stringify(raw)}`)
      // Kafka spells "no limit" as Long.MAX_VALUE for flush.*; accept -1 too, as people type it.
      if (k.infinite === 'max' && n === -1) return Infinity
      if (!Number.isSafeInteger(n) || n < k.min || n > k.max) {
        throw new ConfigError(`${where}expected an integer from ${k.min} to ${k.max}, got ${JSON.stringify(raw)}`)
      }
      return n
    }
  }
}

export function readConfigFile(path: string, readFile: (p: string) => string): Record<string, unknown> {
  let text: string
  try {
    text = readFile(path)
  } catch (err) {
    throw new ConfigError(`cannot read config file ${path}: ${(err as Error).message}`)
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (err) {
    throw new ConfigError(`config file ${path} is not valid JSON: ${(err as Error).message}`)
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError(`config file ${path} must hold a JSON object`)
  }
  return parsed as Record<string, unknown>
}

// parseArgs refuses `--retention-ms -1` as ambiguous (the value looks like a
// flag); -1 is how Kafka spells "unlimited", so glue a negative number to the
// value-taking flag before it.
export function joinNegativeValues(argv: readonly string[]): string[] {
  const out: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    const next = argv[i + 1]
    if (a.startsWith('--') && !a.includes('=') && next !== undefined && /^-\d+$/.test(next)) {
      out.push(`${a}=${next}`)
      i++
    } else {
      out.push(a)
    }
  }
  return out
}
