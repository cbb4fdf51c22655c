import { ConfigError } from '../../config.js'
import type { ListenerSpec } from '../listeners.js'
import { SUPPORTED_MECHANISMS } from '../mechanisms.js'
import { type OAuthBearerSettings, parseJaasConfig } from '../oauthbearer/config.js'

/** The login module Kafka requires in each mechanism's sasl.jaas.config. */
export const LOGIN_MODULES: Record<string, string> = {
  PLAIN: 'org.apache.kafka.common.security.plain.PlainLoginModule',
  'SCRAM-SHA-256': 'org.apache.kafka.common.security.scram.ScramLoginModule',
  'SCRAM-SHA-512': 'org.apache.kafka.common.security.scram.ScramLoginModule',
  OAUTHBEARER: 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule',
}

/** Kafka's listener prefix (KIP-103): `listener.name.<listener, lower case>.<setting>`. */
export const LISTENER_NAME_PREFIX = 'listener.name.'

export function isListenerNameKey(key: string): boolean {
  return key.startsWith(LISTENER_NAME_PREFIX)
}

/** What one listener sets for itself; anything left out falls back to the broker-wide setting, as in Kafka. */
export interface ListenerSaslSettings {
  /** listener.name.<l>.sasl.enabled.mechanisms */
  enabledMechanisms?: string[]
  /** listener.name.<l>.<mechanism>.sasl.jaas.config, by upper-case mechanism. */
  jaasConfig: Map<string, string>
  /** listener.name.<l>.<mechanism>.sasl.server.callback.handler.class, by upper-case mechanism. */
  callbackHandler: Map<string, string>
  /** listener.name.<l>.sasl.oauthbearer.* (or with the oauthbearer. mechanism prefix). */
  oauthbearer: Partial<OAuthBearerSettings>
}

const OAUTH_KEYS: Record<string, { field: keyof OAuthBearerSettings; int?: true }> = {
  'sasl.oauthbearer.jwks.endpoint.url': { field: 'jwksEndpointUrl' },
  'sasl.oauthbearer.jwks.endpoint.refresh.ms': { field: 'jwksEndpointRefreshMs', int: true },
  'sasl.oauthbearer.expected.audience': { field: 'expectedAudience' },
  'sasl.oauthbearer.expected.issuer': { field: 'expectedIssuer' },
  'sasl.oauthbearer.sub.claim.name': { field: 'subClaimName' },
  'sasl.oauthbearer.scope.claim.name': { field: 'scopeClaimName' },
  'sasl.oauthbearer.clock.skew.seconds': { field: 'clockSkewSeconds', int: true },
}

export function parseMechanismList(text: string, where: string): string[] {
  const list = text.split(',').map((m) => m.trim().toUpperCase()).filter((m) => m !== '')
  for (const m of list) {
    if (!(SUPPORTED_MECHANISMS as readonly string[]).includes(m)) {
      throw new ConfigError(`${where}: ${m} is not served (${SUPPORTED_MECHANISMS.join(', ')}; GSSAPI is not)`)
    }
  }
  return list
}

/**
 * Reads the `listener.name.*` settings into one entry per listener. A key naming a listener that
 * is not configured, a mechanism that is not served, or a setting that is not per-listener here
 * is a ConfigError naming the key, so a typo fails at start instead of silently applying nothing.
 */
export function parseListenerSaslSettings(configs: Readonly<Record<string, string>>, listeners: readonly ListenerSpec[]): Map<string, ListenerSaslSettings> {
  const out = new Map<string, ListenerSaslSettings>()
  const mechanisms = SUPPORTED_MECHANISMS.map((m) => m.toLowerCase())
  for (const [key, value] of Object.entries(configs)) {
    if (!isListenerNameKey(key)) throw new ConfigError(`${key}: not a ${LISTENER_NAME_PREFIX}<listener>.<setting> key`)
    const rest = key.slice(LISTENER_NAME_PREFIX.length)
    const dot = rest.indexOf('.')
    const listener = listeners.find((l) => l.name.toLowerCase() === rest.slice(0, dot).toLowerCase())
    if (dot <= 0 || listener === undefined) {
      throw new ConfigError(`${key}: ${JSON.stringify(rest.slice(0, Math.max(dot, 0)))} is not one of the listeners (${listeners.map((l) => l.name.toLowerCase()).join(', ')})`)
    }
    let s = out.get(listener.name)
    if (s === undefined) out.set(listener.name, (s = { jaasConfig: new Map(), callbackHandler: new Map(), oauthbearer: {} }))
    let setting = rest.slice(dot + 1)
    if (setting === 'sasl.enabled.mechanisms') {
      s.enabledMechanisms = parseMechanismList(value, key)
      continue
    }
    const mechanism = mechanisms.find((m) => setting.startsWith(`${m}.`))
    if (mechanism !== undefined) setting = setting.slice(mechanism.length + 1)
    const upper = mechanism?.toUpperCase()
    if (upper !== undefined && setting === 'sasl.jaas.config') {
      let module: string
      try {
        module = parseJaasConfig(value).loginModule
      } catch (err) {
        throw new ConfigError(`${key}: ${(err as Error).message}`)
      }
      if (module !== LOGIN_MODULES[upper]) throw new ConfigError(`${key}: ${upper} needs ${LOGIN_MODULES[upper]}, not ${module}`)
      s.jaasConfig.set(upper, value)
      continue
    }
    if (upper !== undefined && setting === 'sasl.server.callback.handler.class') {
      s.callbackHandler.set(upper, value)
      continue
    }
    const oauth = OAUTH_KEYS[setting]
    if (oauth !== undefined && (upper === undefined || upper === 'OAUTHBEARER')) {
      if (oauth.int === true) {
        if (!/^\d+$/.test(value.trim())) throw new ConfigError(`${key}: expected a non-negative integer, got ${JSON.stringify(value)}`)
        ;(s.oauthbearer as Record<string, unknown>)[oauth.field] = Number(value)
      } else {
        ;(s.oauthbearer as Record<string, unknown>)[oauth.field] = value
      }
      continue
    }
    throw new ConfigError(
      `${key}: not a per-listener setting this broker serves (sasl.enabled.mechanisms, <mechanism>.sasl.jaas.config, ` +
        '<mechanism>.sasl.server.callback.handler.class, sasl.oauthbearer.*)',
    )
  }
  return out
}
