import type { PlainOptions, SaslMechanism } from './types.js'

/** RFC 4616: one message, authzid NUL authcid NUL password; the broker answers with nothing. */
export function plainMechanism(options: Omit<PlainOptions, 'mechanism'>): SaslMechanism {
  const message = Buffer.from(`${options.authorizationIdentity ?? ''}\0${options.username}\0${options.password}`, 'utf8')
  return {
    mechanism: 'PLAIN',
    async *authenticate() {
      yield message
    },
  }
}
