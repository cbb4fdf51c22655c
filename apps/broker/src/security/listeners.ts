import { ConfigError } from '../config.js'

export type SecurityProtocol = 'PLAINTEXT' | 'SSL' | 'SASL_PLAINTEXT' | 'SASL_SSL'

const PROTOCOLS: readonly SecurityProtocol[] = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL']

export interface ListenerSpec {
  /** The listener name (upper case, as Kafka normalises it). */
  name: string
  protocol: SecurityProtocol
  /** '' or a wildcard binds every interface. */
  host: string
  port: number
  /** advertised.listeners' entry for this listener, when given. */
  advertised?: { host: string; port: number }
}

export function usesTls(p: SecurityProtocol): boolean {
  return p === 'SSL' || p === 'SASL_SSL'
}

export function usesSasl(p: SecurityProtocol): boolean {
  return p === 'SASL_PLAINTEXT' || p === 'SASL_SSL'
}

interface Endpoint {
  name: string
  host: string
  port: number
}

// NAME://host:port, where host may be empty (all interfaces) or a bracketed IPv6 address.
const ENDPOINT = /^([A-Za-z0-9_-]+):\/\/(\[[0-9a-fA-F:.]+\]|[^:/\s]*):(\d+)$/

function parseEndpoints(text: string, what: string): Endpoint[] {
  const out: Endpoint[] = []
  for (const raw of text.split(',')) {
    const item = raw.trim()
    if (item === '') continue
    const m = ENDPOINT.exec(item)
    if (m === null) throw new ConfigError(`${what}: ${JSON.stringify(item)} is not NAME://host:port`)
    const port = Number(m[3])
    if (port > 65535) throw new ConfigError(`${what}: port ${port} in ${JSON.stringify(item)} is out of range`)
    const host = m[2]!.startsWith('[') ? m[2]!.slice(1, -1) : m[2]!
    const name = m[1]!.toUpperCase()
    if (out.some((e) => e.name === name)) throw new ConfigError(`${what}: listener ${name} is named twice`)
    out.push({ name, host, port })
  }
  return out
}

/** listener.security.protocol.map: NAME:PROTOCOL pairs; the four protocol names map to themselves by default. */
export function parseProtocolMap(text: string | undefined): Map<string, SecurityProtocol> {
  const map = new Map<string, SecurityProtocol>(PROTOCOLS.map((p) => [p, p]))
  if (text === undefined) return map
  // Kafka replaces the default map when one is given.
  map.clear()
  for (const raw of text.split(',')) {
    const item = raw.trim()
    if (item === '') continue
    const [name, protocol, ...rest] = item.split(':')
    const p = protocol?.trim().toUpperCase() as SecurityProtocol
    if (name === undefined || name.trim() === '' || rest.length > 0 || !PROTOCOLS.includes(p)) {
      throw new ConfigError(`listener-security-protocol-map: ${JSON.stringify(item)} is not NAME:${PROTOCOLS.join('|')}`)
    }
    map.set(name.trim().toUpperCase(), p)
  }
  return map
}

/**
 * The listeners to open: `listeners` (Kafka's syntax) when set, else one PLAINTEXT
 * listener on host:port so the default start is unchanged.
 */
export function resolveListeners(c: {
  host: string
  port: number
  advertisedHost: string | undefined
  advertisedPort: number | undefined
  listeners: string | undefined
  advertisedListeners: string | undefined
  listenerSecurityProtocolMap: string | undefined
}): ListenerSpec[] {
  if (c.listeners === undefined) {
    const spec: ListenerSpec = { name: 'PLAINTEXT', protocol: 'PLAINTEXT', host: c.host, port: c.port }
    if (c.advertisedHost !== undefined || c.advertisedPort !== undefined) {
      spec.advertised = { host: c.advertisedHost ?? '', port: c.advertisedPort ?? 0 }
    }
    return [spec]
  }
  const map = parseProtocolMap(c.listenerSecurityProtocolMap)
  const endpoints = parseEndpoints(c.listeners, 'listeners')
  if (endpoints.length === 0) throw new ConfigError('listeners: no listener given')
  const ports = new Set<number>()
  const specs = endpoints.map((e): ListenerSpec => {
    const protocol = map.get(e.name)
    if (protocol === undefined) {
      throw new ConfigError(`listeners: ${e.name} has no security protocol; name it in listener-security-protocol-map (e.g. ${e.name}:SASL_SSL)`)
    }
    if (e.port !== 0 && ports.has(e.port)) throw new ConfigError(`listeners: port ${e.port} is used twice`)
    ports.add(e.port)
    return { name: e.name, protocol, host: e.host, port: e.port }
  })
  if (c.advertisedListeners !== undefined) {
    for (const a of parseEndpoints(c.advertisedListeners, 'advertised-listeners')) {
      const spec = specs.find((s) => s.name === a.name)
      if (spec === undefined) throw new ConfigError(`advertised-listeners: ${a.name} is not one of the listeners`)
      spec.advertised = { host: a.host, port: a.port }
    }
  }
  return specs
}
