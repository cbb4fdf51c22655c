import { readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import type { ConnectionOptions as TlsOptions } from 'node:tls'
import type { ClientOptions, SaslOptions } from '@tidelog/client'
import { parseBrokerList } from '@tidelog/client'
import { parseInteger, type OptionSpec, type Parsed } from './args.js'
import { UsageError } from './errors.js'

export const DEFAULT_BOOTSTRAP = '127.0.0.1:9092'
/** The CLI's bound on each operation; shorter than Java's 60 s default.api.timeout.ms, since a person waits. */
export const DEFAULT_TIMEOUT_MS = 30_000

// Settings a profile, an environment variable (TIDELOG_<NAME>) or a flag can give, flags winning.
export const CONNECTION_OPTIONS: OptionSpec[] = [
  { name: 'bootstrap-server', short: 'b', kind: 'value', arg: 'HOST:PORT[,...]', help: `brokers to bootstrap from (default ${DEFAULT_BOOTSTRAP})` },
  { name: 'profile', short: 'P', kind: 'value', arg: 'NAME', help: 'connection profile from $XDG_CONFIG_HOME/tidelog/config.json' },
  { name: 'timeout', kind: 'value', arg: 'MS', help: `bound on each operation (default ${DEFAULT_TIMEOUT_MS})` },
  { name: 'client-id', kind: 'value', arg: 'ID', help: "client.id sent to the broker (default 'tidelog-cli')" },
  { name: 'security-protocol', kind: 'value', arg: 'PROTO', help: 'PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL' },
  { name: 'sasl-mechanism', kind: 'value', arg: 'MECH', help: 'PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512' },
  { name: 'sasl-username', kind: 'value', arg: 'USER', help: 'SASL user' },
  { name: 'sasl-password', kind: 'value', arg: 'PASS', help: 'SASL password (better: TIDELOG_SASL_PASSWORD)' },
  { name: 'ssl-ca', kind: 'value', arg: 'FILE', help: 'PEM file of CA certificates to trust' },
  { name: 'ssl-cert', kind: 'value', arg: 'FILE', help: 'PEM client certificate (mutual TLS)' },
  { name: 'ssl-key', kind: 'value', arg: 'FILE', help: 'PEM private key of --ssl-cert' },
  { name: 'ssl-no-verify', kind: 'flag', help: "don't verify the broker's certificate (testing only)" },
]

const SETTINGS = CONNECTION_OPTIONS.map((o) => o.name).filter((n) => n !== 'profile')

export interface Connection {
  client: ClientOptions
  bootstrap: string
  timeoutMs: number
  /** Where each setting came from, for --verbose. */
  sources: Record<string, string>
}

export function configFile(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CONFIG_HOME !== undefined && env.XDG_CONFIG_HOME !== '' ? env.XDG_CONFIG_HOME : join(env.HOME ?? homedir(), '.config')
  return join(base, 'tidelog', 'config.json')
}

interface ConfigFile {
  default?: string
  profiles?: Record<string, Record<string, unknown>>
}

function readConfig(path: string): ConfigFile | undefined {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new UsageError(`cannot read ${path}: ${(e as Error).message}`)
  }
  try {
    const parsed = JSON.parse(text) as unknown
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('expected an object')
    return parsed as ConfigFile
  } catch (e) {
    throw new UsageError(`${path} is not valid JSON: ${(e as Error).message}`)
  }
}

function profileSettings(p: Parsed, env: NodeJS.ProcessEnv): { settings: Record<string, string>; name?: string; path: string } {
  const path = configFile(env)
  const wanted = p.values.get('profile') ?? (env.TIDELOG_PROFILE || undefined)
  const file = readConfig(path)
  const name = wanted ?? file?.default
  if (name === undefined) return { settings: {}, path }
  const profile = file?.profiles?.[name]
  if (profile === undefined) {
    const known = Object.keys(file?.profiles ?? {})
    throw new UsageError(`no profile ${JSON.stringify(name)} in ${path}${known.length > 0 ? ` (it has: ${known.join(', ')})` : ''}`)
  }
  const settings: Record<string, string> = {}
  for (const [k, v] of Object.entries(profile)) {
    if (!SETTINGS.includes(k)) throw new UsageError(`profile ${JSON.stringify(name)} in ${path}: unknown setting ${JSON.stringify(k)} (known: ${SETTINGS.join(', ')})`)
    settings[k] = typeof v === 'string' ? v : String(v)
  }
  return { settings, name, path }
}

const envName = (setting: string) => `TIDELOG_${setting.toUpperCase().replaceAll('-', '_')}`

function readPem(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8')
  } catch (e) {
    throw new UsageError(`${what}: cannot read ${file}: ${(e as Error).message}`)
  }
}

/** Flags over TIDELOG_* variables over the profile over the defaults. */
export function resolveConnection(p: Parsed, env: NodeJS.ProcessEnv = process.env): Connection {
  const profile = profileSettings(p, env)
  const value: Record<string, string> = {}
  const sources: Record<string, string> = {}
  for (const s of SETTINGS) {
    const flag = s === 'ssl-no-verify' ? (p.flags.has(s) ? 'true' : undefined) : p.values.get(s)
    const fromEnv = env[envName(s)]
    if (flag !== undefined) [value[s], sources[s]] = [flag, `--${s}`]
    else if (fromEnv !== undefined && fromEnv !== '') [value[s], sources[s]] = [fromEnv, envName(s)]
    else if (profile.settings[s] !== undefined) [value[s], sources[s]] = [profile.settings[s]!, `profile ${profile.name} (${profile.path})`]
  }
  const bootstrap = value['bootstrap-server'] ?? DEFAULT_BOOTSTRAP
  try {
    parseBrokerList(bootstrap)
  } catch (e) {
    throw new UsageError(`--bootstrap-server: ${(e as Error).message}`)
  }
  const timeoutMs = value.timeout === undefined ? DEFAULT_TIMEOUT_MS : parseInteger(value.timeout, '--timeout', { min: 1 })
  const mechanism = value['sasl-mechanism']?.toUpperCase()
  const protocol = (value['security-protocol'] ?? (mechanism !== undefined ? 'SASL_PLAINTEXT' : 'PLAINTEXT')).toUpperCase()
  if (!['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'].includes(protocol)) {
    throw new UsageError(`--security-protocol must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, got ${JSON.stringify(value['security-protocol'])}`)
  }
  const client: ClientOptions = {
    brokers: bootstrap,
    clientId: value['client-id'] ?? 'tidelog-cli',
    requestTimeoutMs: Math.min(timeoutMs, 30_000),
    connectTimeoutMs: Math.min(timeoutMs, 10_000),
  }
  if (protocol === 'SSL' || protocol === 'SASL_SSL') {
    const tls: TlsOptions = {}
    if (value['ssl-ca'] !== undefined) tls.ca = readPem(value['ssl-ca'], '--ssl-ca')
    if (value['ssl-cert'] !== undefined) tls.cert = readPem(value['ssl-cert'], '--ssl-cert')
    if (value['ssl-key'] !== undefined) tls.key = readPem(value['ssl-key'], '--ssl-key')
    if (value['ssl-no-verify'] === 'true') tls.rejectUnauthorized = false
    client.ssl = Object.keys(tls).length === 0 ? true : tls
  } else if (value['ssl-ca'] !== undefined || value['ssl-cert'] !== undefined) {
    throw new UsageError(`--ssl-ca / --ssl-cert need --security-protocol SSL or SASL_SSL (it is ${protocol})`)
  }
  if (protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL') {
    const m = mechanism ?? 'PLAIN'
    if (!['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'].includes(m)) throw new UsageError(`--sasl-mechanism must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, got ${JSON.stringify(mechanism)}`)
    const username = value['sasl-username']
    const password = value['sasl-password']
    if (username === undefined || password === undefined) throw new UsageError(`${protocol} needs --sasl-username and --sasl-password (or TIDELOG_SASL_USERNAME / TIDELOG_SASL_PASSWORD)`)
    client.sasl = { mechanism: m, username, password } as SaslOptions
  }
  return { client, bootstrap, timeoutMs, sources }
}
