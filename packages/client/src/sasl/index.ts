import { oauthBearerMechanism } from './oauthbearer.js'
import { plainMechanism } from './plain.js'
import { scramMechanism } from './scram.js'
import type { SaslMechanism, SaslOptions } from './types.js'

export type * from './types.js'
export { plainMechanism } from './plain.js'
export { scramMechanism, saslName, scramKeys, SCRAM_MIN_ITERATIONS } from './scram.js'
export { oauthBearerMechanism } from './oauthbearer.js'
export { saslAuthenticate } from './authenticate.js'

/** Turns the `sasl` option into a mechanism; a custom mechanism object is used as is. */
export function createSaslMechanism(options: SaslOptions): SaslMechanism {
  if ('authenticate' in options && typeof options.authenticate === 'function') return options
  const o = options as Exclude<SaslOptions, SaslMechanism>
  switch (String(o.mechanism).toUpperCase()) {
    case 'PLAIN':
      return plainMechanism(o as Extract<SaslOptions, { mechanism: 'plain' }>)
    case 'SCRAM-SHA-256':
    case 'SCRAM-SHA-512':
      return scramMechanism(o as Extract<SaslOptions, { mechanism: 'scram-sha-256' }>)
    case 'OAUTHBEARER':
      return oauthBearerMechanism(o as Extract<SaslOptions, { mechanism: 'oauthbearer' }>)
    default:
      throw new TypeError(`unknown SASL mechanism ${JSON.stringify(o.mechanism)}; pass a SaslMechanism object for custom ones`)
  }
}
