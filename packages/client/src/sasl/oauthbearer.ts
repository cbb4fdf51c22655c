import type { OAuthBearerOptions, SaslMechanism } from './types.js'

const SEPARATOR = '\u0001'
// RFC 7628 section 3.1: keys are alphabetic, values printable ASCII plus whitespace.
const KEY = /^[A-Za-z]+$/
const VALUE = /^[\x21-\x7E \t\r\n]*$/

/**
 * RFC 7628 client initial response: GS2 header, then `auth=Bearer <token>` and any extensions
 * (KIP-342), each terminated by ^A, the whole closed by a second ^A. A non-empty answer is an
 * error document from the broker; RFC 7628 (3.2.3) has the client answer it with a single ^A,
 * after which the broker fails the exchange with its error code.
 */
export function oauthBearerMechanism(options: Omit<OAuthBearerOptions, 'mechanism'>): SaslMechanism {
  return {
    mechanism: 'OAUTHBEARER',
    async *authenticate(ctx) {
      const token = await options.oauthBearerProvider(ctx)
      if (typeof token?.value !== 'string' || token.value === '') throw new TypeError('oauthBearerProvider returned no token value')
      let extensions = ''
      for (const [k, v] of Object.entries(token.extensions ?? {})) {
        if (k === 'auth' || !KEY.test(k) || !VALUE.test(v)) throw new TypeError(`invalid SASL extension ${JSON.stringify(k)}`)
        extensions += `${SEPARATOR}${k}=${v}`
      }
      const authzid = options.authorizationIdentity ? `a=${options.authorizationIdentity}` : ''
      const first = `n,${authzid},${SEPARATOR}auth=Bearer ${token.value}${extensions}${SEPARATOR}${SEPARATOR}`
      const answer = yield Buffer.from(first, 'utf8')
      if (answer.length > 0) {
        yield Buffer.from(SEPARATOR)
        throw new Error(`broker rejected the token: ${answer.toString('utf8')}`)
      }
    },
  }
}
